#pragma once
// The admin API's typed contract (admin/api/contract.json): for each route
// of the route table, by "METHOD pattern", the schemas of its query
// parameters, its request body and its responses by status, and the shared
// components (the Error every failure answers). The OpenAPI document is the
// route table with these schemas (AdminApi::openapi); a test keeps the two
// covering each other, and docs/api/openapi.json equal to what a node serves.
#include <string_view>

namespace baton::admin {

/// The contract's JSON text.
std::string_view api_contract_json();

}  // namespace baton::admin
