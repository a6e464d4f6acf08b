// The anchors' lines (docs/assurance.md, "Anchors"): what a node logs and
// an export prints is read back, from a log's line too, and a line that
// names itself an anchor but cannot be read is an error naming its line.
#include "baton/store/receipt_anchor.h"

#include <gtest/gtest.h>

using namespace baton;
using baton::store::anchor_line;
using baton::store::parse_anchor_line;

namespace {

const std::string hex(64, 'a');

store::ReceiptAnchor read(const std::string& line) {
  auto a = parse_anchor_line(line, 7);
  EXPECT_TRUE(a.has_value()) << line;
  if (!a) return {};
  EXPECT_TRUE(*a) << a->error().message;
  return *a ? **a : store::ReceiptAnchor{};
}

std::string refusal(const std::string& line) {
  auto a = parse_anchor_line(line, 12);
  if (!a) return "not an anchor";
  return *a ? "" : a->error().message;
}

TEST(AnchorLines, WhatIsWrittenIsReadBackWithTheLineItCameFrom) {
  store::ReceiptAnchor runs{"runs", 7, "baton-node-n1-loop/4242", 118, hex, 0};
  store::ReceiptAnchor audit{"audit", 0, "baton-node-n1-api/4250", 31, std::string(64, 'b'), 0};
  store::ReceiptAnchor cp{"checkpoint", 6, "", 0, std::string(64, 'c'), 0};
  for (const auto& a : {runs, audit, cp}) {
    const auto back = read(anchor_line(a));
    EXPECT_EQ(back.kind, a.kind);
    EXPECT_EQ(back.epoch, a.epoch);
    EXPECT_EQ(back.lane, a.lane);
    EXPECT_EQ(back.seq, a.seq);
    EXPECT_EQ(back.hash, a.hash);
    EXPECT_EQ(back.line, 7);
  }
  EXPECT_EQ(anchor_line(runs), "receipts_head kind=runs epoch=7 lane=baton-node-n1-loop/4242 seq=118 hash=" + hex);
}

TEST(AnchorLines, ANodesLogLinesAreReadWithTheirPrefixAndOtherLinesPassedOver) {
  const auto a =
      read("[2026-12-03 20:01:02.345] [info] receipts_checkpoint epoch=4 chains=3 sha256=" + hex + " by_epoch=5\r");
  EXPECT_EQ(a.kind, "checkpoint");
  EXPECT_EQ(a.epoch, 4);
  EXPECT_EQ(a.hash, hex);
  EXPECT_EQ(read("[x] [info] receipts_head kind=audit lane=a/1 seq=2 hash=" + hex).lane, "a/1");
  // The nodes' own formats (base/log.h): text, and JSON with every value a
  // string, after the journal's priority.
  const auto text = read(
      "ts=2026-12-03T20:42:09.757452Z level=info process=n1 event=receipts_head kind=runs epoch=1 "
      "lane=baton-node-n1-loop/29065 seq=3 hash=" +
      hex);
  EXPECT_EQ(text.lane, "baton-node-n1-loop/29065");
  EXPECT_EQ(text.seq, 3);
  const auto json = read(
      "<6>{\"ts\":\"2026-12-03T20:42:09Z\",\"level\":\"info\",\"process\":\"n1\",\"event\":"
      "\"receipts_head\",\"kind\":\"runs\",\"epoch\":\"7\",\"lane\":\"a/1\",\"seq\":\"9\",\"hash\":\"" +
      hex + "\"}");
  EXPECT_EQ(json.epoch, 7);
  EXPECT_EQ(json.seq, 9);
  EXPECT_EQ(json.hash, hex);
  EXPECT_EQ(
      read("{\"event\":\"receipts_checkpoint\",\"epoch\":\"4\",\"chains\":\"3\",\"sha256\":\"" + hex + "\"}").epoch, 4);
  EXPECT_FALSE(parse_anchor_line("{\"event\":\"leader_elected\",\"epoch\":\"5\"}", 1).has_value());
  EXPECT_FALSE(parse_anchor_line("{\"event\": [1, 2", 1).has_value()) << "not JSON: passed over";
  EXPECT_FALSE(parse_anchor_line("[x] [info] leader_elected epoch=5", 1).has_value());
  EXPECT_FALSE(parse_anchor_line("", 1).has_value());
  EXPECT_FALSE(parse_anchor_line("my_receipts_head kind=runs", 1).has_value()) << "a word of its own";
}

TEST(AnchorLines, AnAnchorLineThatCannotBeReadIsNamedWithWhatIsWrong) {
  EXPECT_EQ(refusal("receipts_head kind=runs lane=a/1 seq=2 hash=" + hex),
            "line 12: receipts_head of kind=runs without a number for epoch=");
  EXPECT_EQ(refusal("receipts_head kind=logs lane=a/1 seq=2 hash=" + hex),
            "line 12: receipts_head without kind=runs or kind=audit");
  EXPECT_EQ(refusal("receipts_head kind=audit lane=a/1 seq=0 hash=" + hex),
            "line 12: receipts_head without a link number of 1 or more for seq=");
  EXPECT_EQ(refusal("receipts_head kind=audit lane=a/1 seq=2 hash=" + std::string(64, 'A')),
            "line 12: receipts_head without 64 lowercase hex digits for hash=");
  EXPECT_EQ(refusal("receipts_head kind=audit seq=2 hash=" + hex),
            "line 12: receipts_head without a lane= (a connection's name and pid, no spaces)");
  EXPECT_EQ(refusal("receipts_head kind=audit kind=runs"), "line 12: receipts_head names kind= twice");
  EXPECT_EQ(refusal("receipts_head garbage"), "line 12: receipts_head has a word that is not key=value");
  EXPECT_EQ(refusal("receipts_checkpoint epoch=x sha256=" + hex),
            "line 12: receipts_checkpoint without a number for epoch=");
  EXPECT_EQ(refusal("receipts_checkpoint epoch=3 sha256=12"),
            "line 12: receipts_checkpoint without 64 lowercase hex digits for sha256=");
  EXPECT_EQ(refusal("receipts_head kind=runs epoch=99999999999999999999999 lane=a/1 seq=2 hash=" + hex),
            "line 12: receipts_head of kind=runs without a number for epoch=");
}

}  // namespace
