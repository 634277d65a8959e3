// libzmq's C API, resolved at run time from the libzmq the process already carries: zeromq.js's
// prebuilt addon links libzmq statically and exports its `zmq_*` functions. The relay addon links no
// libzmq and needs no zmq.h, so it builds and loads on a host without libzmq, and a process has one
// libzmq: the one zeromq.js (which serves the replay requests) brought.
//
// The declarations below are the part of libzmq 4.x's stable ABI (zmq.h) that ingest uses: the
// values of these constants and the layout of zmq_msg_t have not changed since 4.0, and Bind()
// refuses a library older than 4.3 (the handshake monitor events became stable there). The names
// are the C API's, inside this namespace, so the code that calls them reads like libzmq's own docs.
#pragma once
#include <cstddef>
#include <string>

namespace kvrelay {
namespace libzmq {

struct zmq_msg_t {
  alignas(sizeof(void*)) unsigned char _[64];
};

// Socket types, options, flags (zmq.h).
constexpr int ZMQ_PAIR = 0;
constexpr int ZMQ_SUB = 2;
constexpr int ZMQ_ROUTER = 6;
constexpr int ZMQ_SUBSCRIBE = 6;
constexpr int ZMQ_FD = 14;
constexpr int ZMQ_EVENTS = 15;
constexpr int ZMQ_LINGER = 17;
constexpr int ZMQ_MAXMSGSIZE = 22;
constexpr int ZMQ_RCVHWM = 24;
constexpr int ZMQ_LAST_ENDPOINT = 32;
constexpr int ZMQ_ZAP_DOMAIN = 55;
constexpr int ZMQ_DONTWAIT = 1;
constexpr int ZMQ_SNDMORE = 2;
constexpr int ZMQ_POLLIN = 1;
// Context options.
constexpr int ZMQ_MAX_SOCKETS = 2;
constexpr int ZMQ_BLOCKY = 70;
// Socket monitor events (v1).
constexpr int ZMQ_EVENT_CONNECTED = 0x0001;
constexpr int ZMQ_EVENT_CONNECT_DELAYED = 0x0002;
constexpr int ZMQ_EVENT_CONNECT_RETRIED = 0x0004;
constexpr int ZMQ_EVENT_ACCEPTED = 0x0020;
constexpr int ZMQ_EVENT_DISCONNECTED = 0x0200;
constexpr int ZMQ_EVENT_HANDSHAKE_SUCCEEDED = 0x1000;
constexpr int ZMQ_EVENT_HANDSHAKE_FAILED_AUTH = 0x4000;
constexpr int ZMQ_EVENT_ALL = 0xFFFF;

// The functions, set by Bind().
extern void* (*zmq_ctx_new)();
extern int (*zmq_ctx_set)(void* context, int option, int value);
extern int (*zmq_ctx_term)(void* context);
extern void* (*zmq_socket)(void* context, int type);
extern int (*zmq_close)(void* socket);
extern int (*zmq_bind)(void* socket, const char* endpoint);
extern int (*zmq_connect)(void* socket, const char* endpoint);
extern int (*zmq_disconnect)(void* socket, const char* endpoint);
extern int (*zmq_setsockopt)(void* socket, int option, const void* value, size_t size);
extern int (*zmq_getsockopt)(void* socket, int option, void* value, size_t* size);
extern int (*zmq_socket_monitor)(void* socket, const char* endpoint, int events);
extern int (*zmq_send)(void* socket, const void* data, size_t size, int flags);
extern int (*zmq_msg_init)(zmq_msg_t* message);
extern int (*zmq_msg_recv)(zmq_msg_t* message, void* socket, int flags);
extern int (*zmq_msg_close)(zmq_msg_t* message);
extern int (*zmq_msg_move)(zmq_msg_t* destination, zmq_msg_t* source);
extern void* (*zmq_msg_data)(zmq_msg_t* message);
extern size_t (*zmq_msg_size)(const zmq_msg_t* message);
extern int (*zmq_msg_more)(const zmq_msg_t* message);
extern int (*zmq_errno)();
extern const char* (*zmq_strerror)(int errnum);

// Where the functions came from.
struct Library {
  std::string path;  // the loaded object that exports them (zeromq.js's addon, in practice)
  int major = 0, minor = 0, patch = 0;
};

// Resolves every function above from a libzmq already loaded in this process, once (thread-safe).
// Returns the library, or throws std::runtime_error naming what is missing: no loaded object
// exports libzmq's API (zeromq.js was not required first), a function is absent, or it is too old.
const Library& Bind();

}  // namespace libzmq
}  // namespace kvrelay
