#pragma once
// The dashboard's files, embedded at build time (admin/dashboard/embed.cmake).
#include <string_view>

namespace baton::admin {

struct DashboardAsset {
  std::string_view name;  ///< "index.html", "app.js", "style.css"
  std::string_view content_type;
  std::string_view body;
};

/// The embedded file `name`, or null.
const DashboardAsset* dashboard_asset(std::string_view name);

}  // namespace baton::admin
