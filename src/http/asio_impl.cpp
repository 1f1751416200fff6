// Boost.Asio and Boost.Beast compiled once here (separate compilation), so the
// Beast-heavy files of the gateway build faster.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
