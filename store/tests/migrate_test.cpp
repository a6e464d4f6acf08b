#include "baton/store_pg/migrate.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
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

// An owner role named `baton` (the name the guides use) has "$user" first in
// its search_path, and 0036 creates a schema of that name: every migration
// after it must still create its objects beside schema_migrations, where
// the nodes look (a role named baton saw 0038's tables land in `baton`).
TEST(Migrate, AnOwnerRoleNamedBatonMigratesEverythingBesideSchemaMigrations) {
  const std::string url = baton::testing::PgInstance::shared().fresh_database("migrate_baton", /*migrated=*/false);
  const std::string database = url.substr(url.rfind('/') + 1);
  {
    pqxx::connection c(url);
    pqxx::nontransaction tx(c);
    tx.exec("DO $$ BEGIN CREATE ROLE baton LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
    tx.exec("ALTER DATABASE " + c.quote_name(database) + " OWNER TO baton");
  }
  const auto at = url.find("://") + 3;
  const std::string as_baton = url.substr(0, at) + "baton" + url.substr(url.find('@', at));
  auto r = store::pg::migrate(as_baton, "t");
  ASSERT_TRUE(r) << r.error().message;
  pqxx::connection c(as_baton);
  pqxx::nontransaction tx(c);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace"
                     " WHERE n.nspname = 'baton' AND k.relkind IN ('r', 'v', 'S')")[0]
                .as<int>(),
            0);
  EXPECT_EQ(tx.exec1("SELECT to_regclass('public.webhooks') IS NOT NULL AND"
                     " to_regclass('public.job_failure_streaks') IS NOT NULL")[0]
                .as<bool>(),
            true);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                     " WHERE n.nspname = 'baton' AND p.proname NOT IN ('trigger', 'emit_event', 'submission')")[0]
                .as<int>(),
            0)
      << "only the SQL API for applications lives in schema baton";
}
