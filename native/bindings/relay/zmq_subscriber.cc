// N-API class ZmqSubscriber: the SUB socket of one engine rank, driven from the addon on libzmq's C
// API (bound at run time to the libzmq zeromq.js carries: ingest/libzmq.h). zeromq.js creates a Promise per receive and a Buffer per frame (~3 µs per 3-frame engine
// message on the ingest thread, as much as everything else ingest does); here one call reads every
// message already queued into a caller-owned arena and record arrays, with no JS object per message.
// Connection events come from the socket's monitor and peer allow-lists from a ZAP handler, both on
// the context of the JS environment (one per thread), so the socket keeps zeromq.js's semantics.
// Readiness is libzmq's ZMQ_FD watched by a uv_poll on the environment's loop; everything closes in
// an async environment cleanup hook, so a thread that ends with sockets open neither leaks nor aborts
// on a loop that still has handles.
#include <napi.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "bindings/modules.h"
#include "bindings/napi_args.h"
#include "ingest/libzmq.h"

namespace kvrelay {
namespace {

using namespace libzmq;  // NOLINT: the C API's own names

// Fields of one message's record in `records` (receive()).
constexpr uint32_t kRecordStride = 3;
enum Status : uint32_t { kOk = 0, kFrameCount = 1, kSequenceLength = 2 };
// [topic, sequence (8 bytes big-endian), payload]: engine-inputs.md §1.1.
constexpr int kLiveFrames = 3;
constexpr size_t kSequenceBytes = 8;
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// A ZAP request: [routing id, delimiter, version, request id, domain, address, identity, mechanism, ...].
constexpr size_t kZapRequestFrames = 8;
constexpr size_t kZapMaxFrames = 16;
// Refused peer addresses kept per domain until their socket's monitor reports the refusal.
constexpr size_t kMaxRefusedKept = 64;

[[noreturn]] void ThrowZmq(Napi::Env env, const std::string& what) {
  const int e = zmq_errno();
  const char* code = e == EADDRINUSE ? "EADDRINUSE" : e == EINVAL ? "EINVAL" : e == EPROTONOSUPPORT ? "EPROTONOSUPPORT" : e == EMFILE ? "EMFILE" : e == ENOENT ? "ENOENT" : "EZMQ";
  args::ThrowCoded(env, code, what + ": " + zmq_strerror(e));
}

// The process's libzmq (zeromq.js's), bound once; a JS error with code ENOLIBZMQ when there is none.
const Library& BindLibzmq(Napi::Env env) {
  try {
    return Bind();
  } catch (const std::exception& e) {
    args::ThrowCoded(env, "ENOLIBZMQ", e.what());
  }
}

// IPv4 peers of a dual-stack socket show as ::ffff:a.b.c.d: compared as a.b.c.d.
std::string PeerAddress(std::string address) {
  if (address.rfind("::ffff:", 0) == 0 && address.find('.') != std::string::npos) return address.substr(7);
  return address;
}

bool Readable(void* socket) {
  uint32_t events = 0;
  size_t size = sizeof events;
  return zmq_getsockopt(socket, ZMQ_EVENTS, &events, &size) == 0 && (events & ZMQ_POLLIN) != 0;
}

// A uv_poll on a socket's ZMQ_FD. Freed by its close callback (a handle outlives uv_close's call).
struct FdWatch {
  uv_poll_t handle;
  void (*ready)(void* owner);
  void* owner;

  static FdWatch* Start(uv_loop_t* loop, void* socket, void (*ready)(void*), void* owner) {
    int fd = -1;
    size_t size = sizeof fd;
    if (zmq_getsockopt(socket, ZMQ_FD, &fd, &size) != 0) return nullptr;
    auto* w = new FdWatch{{}, ready, owner};
    if (uv_poll_init(loop, &w->handle, fd) != 0) {
      delete w;
      return nullptr;
    }
    w->handle.data = w;
    uv_poll_start(&w->handle, UV_READABLE, [](uv_poll_t* h, int, int) {
      auto* self = static_cast<FdWatch*>(h->data);
      self->ready(self->owner);
    });
    // libzmq signals a socket's descriptor when a queue it found empty gets a message; one not yet
    // read counts as not empty. Asking for its events now makes it signal the first message.
    Readable(socket);
    return w;
  }

  // `closed` runs once libuv released the handle (the environment's teardown waits for it).
  void Close(void (*closed)(void*), void* arg) {
    closedCb = closed;
    closedArg = arg;
    uv_poll_stop(&handle);
    uv_close(reinterpret_cast<uv_handle_t*>(&handle), [](uv_handle_t* h) {
      auto* self = static_cast<FdWatch*>(h->data);
      if (self->closedCb) self->closedCb(self->closedArg);
      delete self;
    });
  }

  void (*closedCb)(void*) = nullptr;
  void* closedArg = nullptr;
};

class ZmqSubscriberWrap;

// Per JS environment: the context, the ZAP handler and the open sockets (closed at teardown).
class IngestZmq {
 public:
  static IngestZmq* Of(Napi::Env env, int maxSockets) {
    auto* self = env.GetInstanceData<IngestZmq>();
    if (self != nullptr) return self;
    BindLibzmq(env);
    void* ctx = zmq_ctx_new();
    if (ctx == nullptr) ThrowZmq(env, "zmq_ctx_new");
    // Not blocky: an ending thread must not wait on a socket's unsent messages (a SUB sends none).
    if (zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, maxSockets) != 0 || zmq_ctx_set(ctx, ZMQ_BLOCKY, 0) != 0) {
      zmq_ctx_term(ctx);
      ThrowZmq(env, "zmq_ctx_set");
    }
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
      zmq_ctx_term(ctx);
      throw Napi::Error::New(env, "no event loop");
    }
    self = new IngestZmq(ctx, loop);
    env.SetInstanceData<IngestZmq, Teardown>(self);
    napi_add_async_cleanup_hook(env, &IngestZmq::Cleanup, self, &self->cleanupHandle_);
    return self;
  }

  void* context() const { return ctx_; }
  // A closed socket's monitor endpoint is released by libzmq's reaper later: names are never reused.
  uint64_t NextMonitor() { return nextMonitor_++; }
  void Opened(ZmqSubscriberWrap* s) { sockets_.insert(s); }
  void Closed(ZmqSubscriberWrap* s) { sockets_.erase(s); }
  size_t OpenCount() const { return sockets_.size(); }

  void AllowPeers(Napi::Env env, const std::string& domain, std::unordered_set<std::string> peers) {
    if (zap_ == nullptr) StartZap(env);
    domains_[domain] = std::move(peers);
  }
  void ForgetDomain(const std::string& domain) {
    domains_.erase(domain);
    refused_.erase(domain);
  }

  // The peer of the oldest refusal in `domain` not yet reported, else `otherwise`. libzmq's monitor
  // names the socket's own endpoint for a failed handshake; the ZAP request named the peer, and it
  // comes before that event (issue 26 item 11).
  std::string TakeRefused(const std::string& domain, const std::string& otherwise) {
    auto it = refused_.find(domain);
    if (it == refused_.end() || it->second.empty()) return otherwise;
    std::string peer = std::move(it->second.front());
    it->second.pop_front();
    return peer;
  }

  // Watches are counted: the teardown ends the context once libuv released the last one.
  FdWatch* Watch(void* socket, void (*ready)(void*), void* owner) {
    FdWatch* w = FdWatch::Start(loop_, socket, ready, owner);
    if (w != nullptr) ++watches_;
    return w;
  }
  void Unwatch(FdWatch** w) {
    if (*w == nullptr) return;
    (*w)->Close([](void* self) { static_cast<IngestZmq*>(self)->WatchClosed(); }, this);
    *w = nullptr;
  }

 private:
  IngestZmq(void* ctx, uv_loop_t* loop) : ctx_(ctx), loop_(loop) {}

  // Node may release the instance data before the watches' close callbacks ran (its own cleanup hook
  // runs in the same pass as ours, before the loop turns): whichever of the two comes last deletes.
  static void Teardown(Napi::Env, IngestZmq* self) {
    self->released_ = true;
    if (self->finished_) delete self;
  }

  static void Cleanup(napi_async_cleanup_hook_handle, void* arg);
  void WatchClosed() {
    if (--watches_ == 0 && tearingDown_) Finish();
  }
  void Finish() {
    if (ctx_ != nullptr) zmq_ctx_term(ctx_);
    ctx_ = nullptr;
    if (cleanupHandle_ != nullptr) napi_remove_async_cleanup_hook(cleanupHandle_);
    cleanupHandle_ = nullptr;
    finished_ = true;
    if (released_) delete this;
  }

  void StartZap(Napi::Env env) {
    void* router = zmq_socket(ctx_, ZMQ_ROUTER);
    if (router == nullptr) ThrowZmq(env, "ZAP handler socket");
    const int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(router, kZapEndpoint) != 0) {
      zmq_close(router);
      ThrowZmq(env, "ZAP handler bind");
    }
    zapWatch_ = Watch(router, [](void* self) { static_cast<IngestZmq*>(self)->ServeZap(); }, this);
    if (zapWatch_ == nullptr) {
      zmq_close(router);
      ThrowZmq(env, "ZAP handler poll");
    }
    // The handler serves sockets that keep the loop alive themselves; alone it must not.
    uv_unref(reinterpret_cast<uv_handle_t*>(&zapWatch_->handle));
    zap_ = router;
  }

  // ZMQ RFC 27: every request of a socket with a domain is answered here, before its handshake ends.
  void ServeZap() {
    while (zap_ != nullptr && Readable(zap_)) {
      zmq_msg_t frames[kZapMaxFrames];
      size_t count = 0;
      bool more = true;
      while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, zap_, ZMQ_DONTWAIT) < 0) {
          zmq_msg_close(&part);
          break;
        }
        more = zmq_msg_more(&part) != 0;
        if (count < kZapMaxFrames) {
          frames[count++] = part;
        } else {
          zmq_msg_close(&part);
        }
      }
      if (count >= kZapRequestFrames) Answer(frames);
      for (size_t i = 0; i < count; i++) zmq_msg_close(&frames[i]);
    }
  }

  void Answer(zmq_msg_t* frames) {
    auto text = [&](size_t i) { return std::string(static_cast<const char*>(zmq_msg_data(&frames[i])), zmq_msg_size(&frames[i])); };
    const std::string address = PeerAddress(text(5));
    const auto domain = domains_.find(text(4));
    const bool allowed = domain != domains_.end() && domain->second.count(address) > 0;
    if (!allowed && domain != domains_.end()) {
      std::deque<std::string>& kept = refused_[domain->first];
      if (kept.size() == kMaxRefusedKept) kept.pop_front();
      kept.push_back(address);
    }
    const std::string status = allowed ? "200" : "400";
    const std::string reason = allowed ? "OK" : "peer not allowed";
    // [routing id, delimiter, version, request id, status, reason, user id, metadata]
    for (size_t i = 0; i < 4; i++) zmq_send(zap_, zmq_msg_data(&frames[i]), zmq_msg_size(&frames[i]), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(zap_, status.data(), status.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(zap_, reason.data(), reason.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(zap_, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(zap_, "", 0, ZMQ_DONTWAIT);
  }

  void* ctx_;
  uv_loop_t* loop_;
  void* zap_ = nullptr;
  FdWatch* zapWatch_ = nullptr;
  std::unordered_map<std::string, std::unordered_set<std::string>> domains_;
  std::unordered_map<std::string, std::deque<std::string>> refused_;
  std::unordered_set<ZmqSubscriberWrap*> sockets_;
  int watches_ = 0;
  uint64_t nextMonitor_ = 0;
  bool tearingDown_ = false;
  bool finished_ = false;
  bool released_ = false;
  napi_async_cleanup_hook_handle cleanupHandle_ = nullptr;
};

class ZmqSubscriberWrap : public Napi::ObjectWrap<ZmqSubscriberWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ZmqSubscriber",
                       {InstanceMethod<&ZmqSubscriberWrap::Subscribe>("subscribe"),
                        InstanceMethod<&ZmqSubscriberWrap::Bind>("bind"),
                        InstanceMethod<&ZmqSubscriberWrap::Connect>("connect"),
                        InstanceMethod<&ZmqSubscriberWrap::Disconnect>("disconnect"),
                        InstanceMethod<&ZmqSubscriberWrap::Receive>("receive"),
                        InstanceMethod<&ZmqSubscriberWrap::Close>("close"),
                        InstanceAccessor<&ZmqSubscriberWrap::IsClosed>("closed"),
                        InstanceAccessor<&ZmqSubscriberWrap::IsPending>("pending")});
  }

  // (options: {receiveHighWaterMark, maxMessageSize, maxSockets, zapDomain?}, onReadable(), onEvent(event, value, address))
  explicit ZmqSubscriberWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ZmqSubscriberWrap>(info) {
    Napi::Env env = info.Env();
    const Napi::Value optionsValue = args::Arg(info, 0);
    if (!optionsValue.IsObject()) throw Napi::TypeError::New(env, "options must be an object");
    const Napi::Object options = optionsValue.As<Napi::Object>();
    const int hwm = static_cast<int>(args::UInt(options.Get("receiveHighWaterMark"), "receiveHighWaterMark", INT32_MAX));
    const int64_t maxMessage = static_cast<int64_t>(args::UInt(options.Get("maxMessageSize"), "maxMessageSize", UINT32_MAX));
    const int maxSockets = static_cast<int>(args::UInt(options.Get("maxSockets"), "maxSockets", INT32_MAX));
    const Napi::Value domain = options.Get("zapDomain");
    if (!domain.IsUndefined() && !domain.IsString()) throw Napi::TypeError::New(env, "zapDomain must be a string");
    if (!args::Arg(info, 1).IsFunction() || !args::Arg(info, 2).IsFunction()) {
      throw Napi::TypeError::New(env, "onReadable and onEvent must be functions");
    }
    zmq_ = IngestZmq::Of(env, maxSockets);
    socket_ = zmq_socket(zmq_->context(), ZMQ_SUB);
    if (socket_ == nullptr) ThrowZmq(env, "SUB socket");
    const int linger = 0;
    bool ok = zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger) == 0 &&
              zmq_setsockopt(socket_, ZMQ_RCVHWM, &hwm, sizeof hwm) == 0 &&
              zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &maxMessage, sizeof maxMessage) == 0;
    if (ok && domain.IsString()) {
      zapDomain_ = domain.As<Napi::String>().Utf8Value();
      ok = zmq_setsockopt(socket_, ZMQ_ZAP_DOMAIN, zapDomain_.data(), zapDomain_.size()) == 0;
    }
    const std::string monitorEndpoint = "inproc://kv-dc-relay-monitor-" + std::to_string(zmq_->NextMonitor());
    ok = ok && zmq_socket_monitor(socket_, monitorEndpoint.c_str(), ZMQ_EVENT_ALL) == 0;
    if (ok) {
      monitor_ = zmq_socket(zmq_->context(), ZMQ_PAIR);
      ok = monitor_ != nullptr && zmq_setsockopt(monitor_, ZMQ_LINGER, &linger, sizeof linger) == 0 &&
           zmq_connect(monitor_, monitorEndpoint.c_str()) == 0;
    }
    if (!ok) {
      const int e = zmq_errno();
      Release();
      errno = e;
      ThrowZmq(env, "SUB socket setup");
    }
    onReadable_ = Napi::Persistent(args::Arg(info, 1).As<Napi::Function>());
    onEvent_ = Napi::Persistent(args::Arg(info, 2).As<Napi::Function>());
    async_ = std::make_unique<Napi::AsyncContext>(env, "kv-dc-relay:ZmqSubscriber");
    dataWatch_ = zmq_->Watch(socket_, [](void* s) { static_cast<ZmqSubscriberWrap*>(s)->DataReady(); }, this);
    monitorWatch_ = zmq_->Watch(monitor_, [](void* s) { static_cast<ZmqSubscriberWrap*>(s)->MonitorReady(); }, this);
    if (dataWatch_ == nullptr || monitorWatch_ == nullptr) {
      CloseNative();
      throw Napi::Error::New(env, "cannot watch the SUB socket");
    }
    zmq_->Opened(this);
    // Held while open: the JS object owns the callbacks the loop calls.
    Ref();
  }

  ~ZmqSubscriberWrap() override { CloseNative(); }

  // Closes sockets and watches; also the environment's teardown (the JS object may outlive it).
  void CloseNative() {
    if (socket_ == nullptr && monitor_ == nullptr) return;
    zmq_->Unwatch(&dataWatch_);
    zmq_->Unwatch(&monitorWatch_);
    ReleaseHeld();
    Release();
    zmq_->Closed(this);
  }

 private:
  void Release() {
    if (socket_ != nullptr) {
      // A socket closed with its monitor running is never reaped (its descriptors stay open).
      zmq_socket_monitor(socket_, nullptr, 0);
      zmq_close(socket_);
    }
    if (monitor_ != nullptr) zmq_close(monitor_);
    socket_ = monitor_ = nullptr;
  }

  void Call(Napi::FunctionReference& fn, const std::initializer_list<napi_value>& argv) {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    try {
      fn.MakeCallback(Value(), argv, *async_);
    } catch (const Napi::Error& e) {
      // A throwing handler is the thread's uncaught exception, as it would be from any callback.
      napi_fatal_exception(env, e.Value());
    }
  }

  void DataReady() {
    if (socket_ != nullptr && Readable(socket_)) Call(onReadable_, {});
  }

  void MonitorReady() {
    while (monitor_ != nullptr && Readable(monitor_)) {
      zmq_msg_t head, address;
      zmq_msg_init(&head);
      zmq_msg_init(&address);
      const bool got = zmq_msg_recv(&head, monitor_, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&head) &&
                       zmq_msg_recv(&address, monitor_, ZMQ_DONTWAIT) >= 0;
      // v1 monitor event: [uint16 event, uint32 value] in host order, then the endpoint.
      if (got && zmq_msg_size(&head) == 6) {
        uint16_t event;
        uint32_t value;
        std::memcpy(&event, zmq_msg_data(&head), 2);
        std::memcpy(&value, static_cast<const char*>(zmq_msg_data(&head)) + 2, 4);
        Napi::Env env = Env();
        Napi::HandleScope scope(env);
        std::string where(static_cast<const char*>(zmq_msg_data(&address)), zmq_msg_size(&address));
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && !zapDomain_.empty()) where = zmq_->TakeRefused(zapDomain_, where);
        zmq_msg_close(&head);
        zmq_msg_close(&address);
        Call(onEvent_, {Napi::Number::New(env, event), Napi::Number::New(env, value), Napi::String::New(env, where)});
        continue;
      }
      zmq_msg_close(&head);
      zmq_msg_close(&address);
      if (!got) break;
    }
  }

  void Open(const Napi::CallbackInfo& info) const {
    if (socket_ == nullptr) args::ThrowCoded(info.Env(), "ESOCKETCLOSED", "the socket is closed");
  }

  std::string Endpoint(const Napi::CallbackInfo& info) const {
    Open(info);
    if (!args::Arg(info, 0).IsString()) throw Napi::TypeError::New(info.Env(), "endpoint must be a string");
    return args::Arg(info, 0).As<Napi::String>().Utf8Value();
  }

  Napi::Value Subscribe(const Napi::CallbackInfo& info) {
    const std::string topic = Endpoint(info);
    if (zmq_setsockopt(socket_, ZMQ_SUBSCRIBE, topic.data(), topic.size()) != 0) ThrowZmq(info.Env(), "subscribe");
    return info.Env().Undefined();
  }

  // -> the bound endpoint (a port of 0 or * shows the chosen one).
  Napi::Value Bind(const Napi::CallbackInfo& info) {
    const std::string endpoint = Endpoint(info);
    if (zmq_bind(socket_, endpoint.c_str()) != 0) ThrowZmq(info.Env(), "bind " + endpoint);
    char last[1024];
    size_t size = sizeof last;
    if (zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, last, &size) != 0 || size == 0) ThrowZmq(info.Env(), "last endpoint");
    return Napi::String::New(info.Env(), last, size - 1);
  }

  Napi::Value Connect(const Napi::CallbackInfo& info) {
    const std::string endpoint = Endpoint(info);
    if (zmq_connect(socket_, endpoint.c_str()) != 0) ThrowZmq(info.Env(), "connect " + endpoint);
    return info.Env().Undefined();
  }

  Napi::Value Disconnect(const Napi::CallbackInfo& info) {
    const std::string endpoint = Endpoint(info);
    if (zmq_disconnect(socket_, endpoint.c_str()) != 0) ThrowZmq(info.Env(), "disconnect " + endpoint);
    return info.Env().Undefined();
  }

  // (arena: Uint8Array, records: Uint32Array, sequences: BigUint64Array, maxMessages) -> n >= 0
  // messages read (record i: status, payload offset, payload length or the bad frame's size/count;
  // sequences[i]), or -bytes: the next message's payload needs an arena of that many bytes (it is
  // kept and comes first next time). Payloads are valid until the next call. When `records` has an
  // element past its maxMessages records, it says whether a message read stays held for the next
  // call (1, as `pending`) or not (0): the caller then asks no accessor per wake-up.
  Napi::Value Receive(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Open(info);
    auto arena = args::Typed<uint8_t>(args::Arg(info, 0), napi_uint8_array, "arena (Uint8Array)");
    auto records = args::U32Array(args::Arg(info, 1), "records");
    auto sequences = args::U64Array(args::Arg(info, 2), "sequences");
    const uint32_t max = args::U32(args::Arg(info, 3), "maxMessages");
    const size_t capacity = std::min<size_t>({max, records.ElementLength() / kRecordStride, sequences.ElementLength()});
    const size_t heldSlot = size_t{max} * kRecordStride;
    uint32_t* heldFlag = heldSlot < records.ElementLength() ? records.Data() + heldSlot : nullptr;
    uint8_t* out = arena.Data();
    const size_t room = arena.ElementLength();
    uint32_t* record = records.Data();
    uint64_t* sequence = sequences.Data();
    size_t used = 0;
    size_t n = 0;
    while (n < capacity) {
      if (!held_ && !ReadMessage()) break;
      uint32_t* r = record + n * kRecordStride;
      if (heldStatus_ != kOk) {
        r[0] = heldStatus_;
        r[1] = 0;
        r[2] = heldDetail_;
        sequence[n++] = 0;
        ReleaseHeld();
        continue;
      }
      const size_t size = zmq_msg_size(&heldPayload_);
      if (size > room - used) {
        if (n > 0) break;
        if (heldFlag != nullptr) *heldFlag = 1;
        return Napi::Number::New(env, -static_cast<double>(size));
      }
      std::memcpy(out + used, zmq_msg_data(&heldPayload_), size);
      const auto* s = static_cast<const uint8_t*>(zmq_msg_data(&heldSequence_));
      uint64_t value = 0;
      for (size_t i = 0; i < kSequenceBytes; i++) value = (value << 8) | s[i];
      r[0] = kOk;
      r[1] = static_cast<uint32_t>(used);
      r[2] = static_cast<uint32_t>(size);
      sequence[n++] = value;
      used += size;
      ReleaseHeld();
    }
    if (heldFlag != nullptr) *heldFlag = held_ ? 1 : 0;
    return Napi::Number::New(env, static_cast<double>(n));
  }

  // Reads one whole message into the held slot; false when none is queued.
  bool ReadMessage() {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&part);
      return false;
    }
    // Every part of a message is queued once its first is (libzmq delivers messages whole).
    uint32_t frames = 0;
    zmq_msg_init(&heldSequence_);
    zmq_msg_init(&heldPayload_);
    for (bool more = true; more;) {
      if (frames > 0) {
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, socket_, ZMQ_DONTWAIT) < 0) {
          zmq_msg_close(&part);
          break;
        }
      }
      more = zmq_msg_more(&part) != 0;
      frames += 1;
      if (frames == 2) {
        zmq_msg_move(&heldSequence_, &part);
      } else if (frames == 3) {
        zmq_msg_move(&heldPayload_, &part);
      }
      zmq_msg_close(&part);
    }
    held_ = true;
    heldStatus_ = kOk;
    if (frames != kLiveFrames) {
      heldStatus_ = kFrameCount;
      heldDetail_ = frames;
    } else if (zmq_msg_size(&heldSequence_) != kSequenceBytes) {
      heldStatus_ = kSequenceLength;
      heldDetail_ = static_cast<uint32_t>(zmq_msg_size(&heldSequence_));
    }
    return true;
  }

  void ReleaseHeld() {
    if (!held_) return;
    zmq_msg_close(&heldSequence_);
    zmq_msg_close(&heldPayload_);
    held_ = false;
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (socket_ != nullptr) {
      CloseNative();
      Unref();
    }
    return info.Env().Undefined();
  }

  Napi::Value IsClosed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), socket_ == nullptr); }
  // A message read that the last receive() had no room for: libzmq will not signal it again.
  Napi::Value IsPending(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), held_); }

  IngestZmq* zmq_ = nullptr;
  std::string zapDomain_;
  void* socket_ = nullptr;
  void* monitor_ = nullptr;
  FdWatch* dataWatch_ = nullptr;
  FdWatch* monitorWatch_ = nullptr;
  Napi::FunctionReference onReadable_;
  Napi::FunctionReference onEvent_;
  std::unique_ptr<Napi::AsyncContext> async_;
  // A message read but not yet returned (the arena was full).
  bool held_ = false;
  uint32_t heldStatus_ = kOk;
  uint32_t heldDetail_ = 0;
  zmq_msg_t heldSequence_;
  zmq_msg_t heldPayload_;

  friend class IngestZmq;
};

void IngestZmq::Cleanup(napi_async_cleanup_hook_handle, void* arg) {
  auto* self = static_cast<IngestZmq*>(arg);
  self->tearingDown_ = true;
  // CloseNative() erases from sockets_: iterate over a copy.
  const std::unordered_set<ZmqSubscriberWrap*> open = self->sockets_;
  for (ZmqSubscriberWrap* s : open) s->CloseNative();
  self->Unwatch(&self->zapWatch_);
  if (self->zap_ != nullptr) zmq_close(self->zap_);
  self->zap_ = nullptr;
  if (self->watches_ == 0) self->Finish();
}

// (domain, peers: string[]) -> registers an allow-list for sockets whose zapDomain is `domain`.
Napi::Value AllowPeers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!args::Arg(info, 0).IsString()) throw Napi::TypeError::New(env, "domain must be a string");
  if (!args::Arg(info, 1).IsArray()) throw Napi::TypeError::New(env, "peers must be an array of strings");
  const auto list = args::Arg(info, 1).As<Napi::Array>();
  std::unordered_set<std::string> peers;
  for (uint32_t i = 0; i < list.Length(); i++) {
    const Napi::Value v = list.Get(i);
    if (!v.IsString()) throw Napi::TypeError::New(env, "peers must be an array of strings");
    peers.insert(PeerAddress(v.As<Napi::String>().Utf8Value()));
  }
  const int maxSockets = static_cast<int>(args::UInt(args::Arg(info, 2), "maxSockets", INT32_MAX));
  IngestZmq::Of(env, maxSockets)->AllowPeers(env, args::Arg(info, 0).As<Napi::String>().Utf8Value(), std::move(peers));
  return env.Undefined();
}

Napi::Value ForgetPeers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!args::Arg(info, 0).IsString()) throw Napi::TypeError::New(env, "domain must be a string");
  auto* zmq = env.GetInstanceData<IngestZmq>();
  if (zmq != nullptr) zmq->ForgetDomain(args::Arg(info, 0).As<Napi::String>().Utf8Value());
  return env.Undefined();
}

// Sockets of this thread's context created and not closed yet: a ZmqSubscriber keeps its thread's
// event loop alive until closed, so a count left above 0 is a leak (the test environment checks it).
Napi::Value OpenSockets(const Napi::CallbackInfo& info) {
  auto* zmq = info.Env().GetInstanceData<IngestZmq>();
  return Napi::Number::New(info.Env(), zmq == nullptr ? 0 : static_cast<double>(zmq->OpenCount()));
}

// -> { path, version }: the loaded object whose libzmq ingest uses (zeromq.js's addon in practice).
Napi::Value ZmqLibrary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Library& lib = BindLibzmq(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", lib.path);
  o.Set("version", std::to_string(lib.major) + "." + std::to_string(lib.minor) + "." + std::to_string(lib.patch));
  return o;
}

}  // namespace

void InitZmqIngest(Napi::Env env, Napi::Object exports) {
  exports.Set("ZmqSubscriber", ZmqSubscriberWrap::Define(env));
  exports.Set("zmqAllowPeers", Napi::Function::New<AllowPeers>(env, "zmqAllowPeers"));
  exports.Set("zmqForgetPeers", Napi::Function::New<ForgetPeers>(env, "zmqForgetPeers"));
  exports.Set("zmqOpenSockets", Napi::Function::New<OpenSockets>(env, "zmqOpenSockets"));
  exports.Set("zmqLibrary", Napi::Function::New<ZmqLibrary>(env, "zmqLibrary"));
  Napi::Object record = Napi::Object::New(env);
  record.Set("stride", kRecordStride);
  record.Set("ok", static_cast<uint32_t>(kOk));
  record.Set("frameCount", static_cast<uint32_t>(kFrameCount));
  record.Set("sequenceLength", static_cast<uint32_t>(kSequenceLength));
  exports.Set("zmqRecord", record);
  Napi::Object events = Napi::Object::New(env);
  events.Set("connected", ZMQ_EVENT_CONNECTED);
  events.Set("connectDelayed", ZMQ_EVENT_CONNECT_DELAYED);
  events.Set("connectRetried", ZMQ_EVENT_CONNECT_RETRIED);
  events.Set("accepted", ZMQ_EVENT_ACCEPTED);
  events.Set("disconnected", ZMQ_EVENT_DISCONNECTED);
  events.Set("handshakeSucceeded", ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  events.Set("handshakeFailedAuth", ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
  exports.Set("zmqEvents", events);
}

}  // namespace kvrelay
