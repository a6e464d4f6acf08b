#pragma once
// A history of run ends on one chain, and the receipts' verifier over it:
// the fixture of the receipts' tests (receipts_store_test.cpp,
// receipts_append_only_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "baton/store_pg/pg_verify_store.h"
#include "overlap_fixture.h"
#include "store_test_support.h"

namespace baton::store::pg::test {

class ReceiptsStoreTest : public OverlapStoreTest {
 protected:
  void SetUp() override { plain_jobs({"etl"}); }

  ReceiptsReport check() {
    auto r = verifier.check_receipts(50);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : ReceiptsReport{};
  }
  /// A report's problems (ReceiptsReport, AnchorsReport), a line each.
  template <class Report>
  static std::string listed(const Report& r) {
    std::string out;
    for (const auto& p : r.problems)
      out += p.kind + " " + std::to_string(p.epoch) + " " + p.lane + " #" + std::to_string(p.seq) + ": " + p.problem +
             "\n";
    return out;
  }
  /// The chain of run ends the test's run store wrote in this epoch.
  std::string lane() {
    return text("SELECT lane FROM receipt_links WHERE epoch = " + std::to_string(epoch.value) +
                " AND lane LIKE 'test-runs/%' LIMIT 1");
  }
  /// The link (its seq) whose ends record `run`.
  std::int64_t link_of(RunId run) {
    return std::stoll(
        text("SELECT max(l.seq) FROM receipt_links l, unnest(l.ends) e"
             " WHERE split_part(e, ' ', 2)::bigint = " +
             std::to_string(run.value)));
  }
  /// Three links on one chain: two runs ended together, one failed for
  /// good, one retried (its attempt row) -- and a run canceled before it
  /// ran (a fourth link).
  void history() {
    a = run_of("etl");
    b = run_of("etl");
    end({a, b}, true);
    c = run_of("etl");
    end(c, false);
    d = run_of("etl");
    end(d, false, true);
    e = run_of("etl");
    auto x = runs.cancel(RunFence{e, Version{1}, epoch}, RunState::pending, "not wanted");
    ASSERT_TRUE(x && x->outcome == WriteOutcome::applied);
  }

  PgVerifyStore verifier{url, "test-verify"};
  RunId a{0}, b{0}, c{0}, d{0}, e{0};
};

}  // namespace baton::store::pg::test
