#include "baton/store_pg/migrate.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "baton/store_testing/pg_instance.h"

using namespace baton;

TEST(Migrate, ConcurrentMigratorsApplyEachMigrationExactlyOnce) {
  auto url = baton::testing::PgInstance::shared().fresh_database("migrate", /*migrated=*/false);
  const auto shipped = store::pg::embedded_migrations();
  ASSERT_FALSE(shipped.empty());
  std::vector<Result<store::pg::MigrateReport>> reports(4, store::pg::MigrateReport{});
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < reports.size(); ++i)
    threads.emplace_back([&, i] { reports[i] = store::pg::migrate(url, "t" + std::to_string(i)); });
  for (auto& t : threads) t.join();
  std::size_t applied = 0;
  for (auto& r : reports) {
    ASSERT_TRUE(r) << r.error().message;
    applied += r->applied.size();
    EXPECT_EQ(r->current_version, shipped.back().version);
  }
  EXPECT_EQ(applied, shipped.size());
  baton::testing::DbInspector db(url);
  EXPECT_EQ(db.applied_migrations().size(), shipped.size());
  EXPECT_EQ(db.lease().epoch, 0);

  auto again = store::pg::migrate(url, "again");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->applied.empty());
}

TEST(Migrate, UnreachableDatabaseIsAClearError) {
  auto r = store::pg::migrate("postgresql://postgres@127.0.0.1:1/nope", "t");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::db_unavailable);
  EXPECT_NE(r.error().message.find("127.0.0.1:1/nope"), std::string::npos) << r.error().message;
}
