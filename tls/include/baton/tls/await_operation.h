#pragma once
// One asynchronous Asio operation run to its end on a private io_context,
// for the Beast clients (ctl's API client, the webhook sender): everything
// they do is asynchronous because a stream's deadline (expires_after, set
// once for the whole call) applies only to asynchronous operations, so a
// peer that accepts and then says nothing cannot hold them past it.
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

namespace baton::tls {

template <class Start>
boost::system::error_code await_operation(boost::asio::io_context& ioc, Start start) {
  boost::system::error_code result = boost::asio::error::operation_aborted;
  start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace baton::tls
