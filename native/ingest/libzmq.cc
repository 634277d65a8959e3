// Binds libzmq.h's function pointers to the libzmq already loaded in the process. Node loads addons
// with RTLD_LOCAL, so zeromq.js's exported `zmq_*` are not in the global scope: every loaded object
// is asked by name (dlopen with RTLD_NOLOAD only returns a handle to what is already there; it never
// loads a library of its own).
#include "ingest/libzmq.h"

#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <stdexcept>
#include <vector>

namespace kvrelay {
namespace libzmq {

void* (*zmq_ctx_new)() = nullptr;
int (*zmq_ctx_set)(void*, int, int) = nullptr;
int (*zmq_ctx_term)(void*) = nullptr;
void* (*zmq_socket)(void*, int) = nullptr;
int (*zmq_close)(void*) = nullptr;
int (*zmq_bind)(void*, const char*) = nullptr;
int (*zmq_connect)(void*, const char*) = nullptr;
int (*zmq_disconnect)(void*, const char*) = nullptr;
int (*zmq_setsockopt)(void*, int, const void*, size_t) = nullptr;
int (*zmq_getsockopt)(void*, int, void*, size_t*) = nullptr;
int (*zmq_socket_monitor)(void*, const char*, int) = nullptr;
int (*zmq_send)(void*, const void*, size_t, int) = nullptr;
int (*zmq_msg_init)(zmq_msg_t*) = nullptr;
int (*zmq_msg_recv)(zmq_msg_t*, void*, int) = nullptr;
int (*zmq_msg_close)(zmq_msg_t*) = nullptr;
int (*zmq_msg_move)(zmq_msg_t*, zmq_msg_t*) = nullptr;
void* (*zmq_msg_data)(zmq_msg_t*) = nullptr;
size_t (*zmq_msg_size)(const zmq_msg_t*) = nullptr;
int (*zmq_msg_more)(const zmq_msg_t*) = nullptr;
int (*zmq_errno)() = nullptr;
const char* (*zmq_strerror)(int) = nullptr;

namespace {

constexpr int kMinMajor = 4;
constexpr int kMinMinor = 3;

std::vector<std::string> LoadedObjects() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &names);
  return names;
}

template <typename F>
void Resolve(void* handle, const char* name, F* slot, const std::string& path) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) throw std::runtime_error(path + " exports libzmq's API but not " + name);
  *slot = reinterpret_cast<F>(symbol);
}

Library BindOnce() {
  for (const std::string& name : LoadedObjects()) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* probe = dlsym(handle, "zmq_msg_recv");
    Dl_info where{};
    // dlsym searches the object's dependencies too: take only an object that defines libzmq itself.
    if (probe == nullptr || dladdr(probe, &where) == 0 || where.dli_fname == nullptr || name != where.dli_fname) {
      dlclose(handle);
      continue;
    }
    Library lib;
    lib.path = name;
    void (*version)(int*, int*, int*) = nullptr;
    Resolve(handle, "zmq_version", &version, name);
    version(&lib.major, &lib.minor, &lib.patch);
    if (lib.major != kMinMajor || lib.minor < kMinMinor) {
      throw std::runtime_error(name + " carries libzmq " + std::to_string(lib.major) + "." + std::to_string(lib.minor) + "." +
                               std::to_string(lib.patch) + "; ingest needs 4.3 or newer 4.x");
    }
    Resolve(handle, "zmq_ctx_new", &zmq_ctx_new, name);
    Resolve(handle, "zmq_ctx_set", &zmq_ctx_set, name);
    Resolve(handle, "zmq_ctx_term", &zmq_ctx_term, name);
    Resolve(handle, "zmq_socket", &zmq_socket, name);
    Resolve(handle, "zmq_close", &zmq_close, name);
    Resolve(handle, "zmq_bind", &zmq_bind, name);
    Resolve(handle, "zmq_connect", &zmq_connect, name);
    Resolve(handle, "zmq_disconnect", &zmq_disconnect, name);
    Resolve(handle, "zmq_setsockopt", &zmq_setsockopt, name);
    Resolve(handle, "zmq_getsockopt", &zmq_getsockopt, name);
    Resolve(handle, "zmq_socket_monitor", &zmq_socket_monitor, name);
    Resolve(handle, "zmq_send", &zmq_send, name);
    Resolve(handle, "zmq_msg_init", &zmq_msg_init, name);
    Resolve(handle, "zmq_msg_recv", &zmq_msg_recv, name);
    Resolve(handle, "zmq_msg_close", &zmq_msg_close, name);
    Resolve(handle, "zmq_msg_move", &zmq_msg_move, name);
    Resolve(handle, "zmq_msg_data", &zmq_msg_data, name);
    Resolve(handle, "zmq_msg_size", &zmq_msg_size, name);
    Resolve(handle, "zmq_msg_more", &zmq_msg_more, name);
    Resolve(handle, "zmq_errno", &zmq_errno, name);
    Resolve(handle, "zmq_strerror", &zmq_strerror, name);
    // The handle stays open: the library is used for the rest of the process's life.
    return lib;
  }
  throw std::runtime_error("no libzmq is loaded in this process (require('zeromq') before opening an ingest socket)");
}

}  // namespace

const Library& Bind() {
  // Not std::call_once: a failed bind (zeromq.js not loaded yet) is retried by the next call. Every
  // caller takes the mutex, so the pointers written here are visible to the thread that uses them.
  static std::mutex mutex;
  static Library library;
  static bool bound = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!bound) {
    library = BindOnce();
    bound = true;
  }
  return library;
}

}  // namespace libzmq
}  // namespace kvrelay
