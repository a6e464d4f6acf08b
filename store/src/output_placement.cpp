#include "baton/store/output_placement.h"

#include <algorithm>

namespace baton::store {

namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

std::vector<LogRow> place_output(std::int64_t have, const OutputChunk& chunk, std::int64_t cap) {
  std::vector<LogRow> rows;
  const std::int64_t end = chunk.offset + static_cast<std::int64_t>(chunk.data.size());
  if (end <= have || have >= cap) return rows;
  std::int64_t start = chunk.offset;
  std::size_t from = 0;
  if (start > have) {
    rows.push_back({"[baton: " + std::to_string(start - have) + " bytes of " + chunk.stream + " were lost]\n"});
  } else if (start < have) {
    // Already logged up to `have`; the rest starts at the next character
    // (a resend may be cut elsewhere than the first send).
    from = static_cast<std::size_t>(have - start);
    while (from < chunk.data.size() && continuation(chunk.data[from])) ++from;
    start += static_cast<std::int64_t>(from);
    if (from >= chunk.data.size()) return rows;
  }
  std::size_t to = chunk.data.size();
  const bool capped = end > cap;
  if (capped) {
    to = static_cast<std::size_t>(std::max<std::int64_t>(cap - chunk.offset, static_cast<std::int64_t>(from)));
    while (to > from && to < chunk.data.size() && continuation(chunk.data[to])) --to;
  }
  if (to > from)
    rows.push_back({chunk.data.substr(from, to - from), start, chunk.offset + static_cast<std::int64_t>(to)});
  if (capped)
    rows.push_back(
        {"\n[baton: " + chunk.stream + " past " + std::to_string(cap) + " bytes is kept in the log archive only]\n",
         cap, cap});
  return rows;
}

}  // namespace baton::store
