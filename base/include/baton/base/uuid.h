#pragma once
#include <string>

namespace baton {
/// A random (version 4) UUID in canonical text form, from std::random_device.
std::string random_uuid();
}  // namespace baton
