#pragma once
// The journal's encoding of what the book is told: any value as JSON by its
// fields in order (Boost.PFR sees every field of an aggregate, so nothing is
// listed and nothing can be forgotten), written straight into the line's
// text with no tree in between: this runs on the control loop's thread for
// every input. An aggregate is an array of its fields, a variant [index,
// value], an optional null or its value, a map an array of [key, value],
// an aggregate of one field (an id, a time) that field.
// Positional, so a journal is read by the build that wrote it, which a
// replay needs anyway (docs/assurance.md, "Incident replay"). Private to
// baton_journal.
#include <boost/json.hpp>
#include <boost/mp11.hpp>
#include <boost/pfr.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace baton::journal::fields {

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_variant : std::false_type {};
template <class... T>
struct is_variant<std::variant<T...>> : std::true_type {};
template <class T>
struct is_duration : std::false_type {};
template <class R, class P>
struct is_duration<std::chrono::duration<R, P>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
constexpr bool is_map = requires {
  typename T::mapped_type;
};
template <class T>
constexpr bool is_sequence = requires(T& t) {
  t.begin();
  t.size();
};
}  // namespace detail

/// `s` as a JSON string. Bytes are copied as they are (the texts the book
/// sees were valid UTF-8 where they came from); quotes, backslashes and
/// control characters are escaped.
inline void write_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t plain = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
}

template <class T>
void write(std::string& out, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  } else if constexpr (std::is_enum_v<T>) {
    write(out, static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    write_string(out, v);
  } else if constexpr (detail::is_optional<T>::value) {
    if (v)
      write(out, *v);
    else
      out += "null";
  } else if constexpr (detail::is_variant<T>::value) {
    out += '[';
    write(out, v.index());
    out += ',';
    std::visit([&](const auto& x) { write(out, x); }, v);
    out += ']';
  } else if constexpr (detail::is_duration<T>::value) {
    write(out, v.count());
  } else if constexpr (detail::is_pair<T>::value) {
    out += '[';
    write(out, v.first);
    out += ',';
    write(out, v.second);
    out += ']';
  } else if constexpr (detail::is_sequence<T>) {  // vector, map (of pairs), set
    out += '[';
    bool first = true;
    for (const auto& x : v) {
      if (!first) out += ',';
      first = false;
      write(out, x);
    }
    out += ']';
  } else if constexpr (boost::pfr::tuple_size_v<T> == 1) {  // an id, a time: the field alone
    write(out, boost::pfr::get<0>(v));
  } else {
    out += '[';
    bool first = true;
    boost::pfr::for_each_field(v, [&](const auto& f) {
      if (!first) out += ',';
      first = false;
      write(out, f);
    });
    out += ']';
  }
}

/// Reads what write() wrote into `v`; throws std::exception (a journal that
/// is not this build's, or not a journal) with what did not fit.
template <class T>
void read(const boost::json::value& j, T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    v = j.as_bool();
  } else if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    v = j.to_number<T>();
  } else if constexpr (std::is_enum_v<T>) {
    v = static_cast<T>(j.to_number<std::underlying_type_t<T>>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = std::string(j.as_string());
  } else if constexpr (detail::is_optional<T>::value) {
    if (j.is_null()) {
      v.reset();
    } else {
      v.emplace();
      read(j, *v);
    }
  } else if constexpr (detail::is_variant<T>::value) {
    const auto& a = j.as_array();
    const auto index = a.at(0).to_number<std::size_t>();
    if (index >= std::variant_size_v<T>) throw std::out_of_range("a variant's index beyond its alternatives");
    boost::mp11::mp_with_index<std::variant_size_v<T>>(index, [&](auto I) {
      auto& x = v.template emplace<I>();
      read(a.at(1), x);
    });
  } else if constexpr (detail::is_duration<T>::value) {
    v = T{j.to_number<typename T::rep>()};
  } else if constexpr (detail::is_pair<T>::value) {
    const auto& a = j.as_array();
    read(a.at(0), v.first);
    read(a.at(1), v.second);
  } else if constexpr (detail::is_map<T>) {
    v.clear();
    for (const auto& e : j.as_array()) {
      typename T::key_type k{};
      typename T::mapped_type m{};
      read(e.as_array().at(0), k);
      read(e.as_array().at(1), m);
      v.emplace(std::move(k), std::move(m));
    }
  } else if constexpr (detail::is_sequence<T> && requires { typename T::key_type; }) {  // set
    v.clear();
    for (const auto& e : j.as_array()) {
      typename T::key_type k{};
      read(e, k);
      v.insert(std::move(k));
    }
  } else if constexpr (detail::is_sequence<T>) {  // vector
    const auto& a = j.as_array();
    v.clear();
    v.resize(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) read(a[i], v[i]);
  } else if constexpr (boost::pfr::tuple_size_v<T> == 1) {
    read(j, boost::pfr::get<0>(v));
  } else {
    const auto& a = j.as_array();
    if (a.size() != boost::pfr::tuple_size_v<T>)
      throw std::length_error("a row with " + std::to_string(a.size()) + " fields where this build has " +
                              std::to_string(boost::pfr::tuple_size_v<T>));
    std::size_t i = 0;
    boost::pfr::for_each_field(v, [&](auto& f) { read(a[i++], f); });
  }
}

}  // namespace baton::journal::fields
