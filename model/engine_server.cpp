#include "model/engine_server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "model/chat_format.h"

namespace cuda_agent {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// An error reply: status and the {"error": {...}} body.
struct Reply {
  int status = 200;
  json body;
};

Reply error_reply(int status, const Error& e, json extra = json::object()) {
  json err = {{"category", std::string(to_string(e.category))},
              {"code", e.code},
              {"type", status == 400 || status == 404 || status == 409 ? "invalid_request_error"
                                                                       : "server_error"},
              {"message", e.message}};
  for (auto& [k, v] : extra.items()) err[k] = v;
  return {status, json{{"error", std::move(err)}}};
}

Reply bad_field(const std::string& param, const std::string& what) {
  return error_reply(
      400, make_error(ErrorCategory::kInvalidInput, "engine.bad_request", param + ": " + what),
      {{"param", param}});
}

int status_of(const Error& e) {
  if (e.code == "engine.stale_version") return 409;
  switch (e.category) {
    case ErrorCategory::kInvalidInput: return 400;
    case ErrorCategory::kNotFound: return 404;
    case ErrorCategory::kUnavailable: return 503;
    case ErrorCategory::kTimeout: return 504;
    default: return 500;
  }
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// What a generation request asks for, once read and checked.
struct GenerationAsk {
  bool chat = false;
  std::vector<std::int64_t> prompt;
  EngineSampling sampling;
  bool max_tokens_given = false;
  bool logprobs = false;
  bool token_id_strings = false;  // return_tokens_as_token_ids
};

// Reads the sampling fields shared by both endpoints. Returns an error reply or nothing.
std::optional<Reply> read_sampling(const json& j, const std::vector<std::int64_t>& default_stop,
                                   std::mt19937_64& rng, std::mutex& rng_mu, GenerationAsk& a) {
  EngineSampling& s = a.sampling;
  auto present = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  if (present("stream") && (!j["stream"].is_boolean() || j["stream"].get<bool>()))
    return bad_field("stream", "streaming is not supported");
  if (present("n") && (!j["n"].is_number_integer() || j["n"].get<std::int64_t>() != 1))
    return bad_field("n", "only n = 1 is supported");
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (!present(k)) continue;
    if (!j[k].is_number_integer() || j[k].get<std::int64_t>() < 1)
      return bad_field(k, "must be an integer >= 1");
    s.max_new_tokens = j[k].get<std::int64_t>();
    a.max_tokens_given = true;
  }
  if (present("temperature")) {
    if (!j["temperature"].is_number() || !(j["temperature"].get<double>() >= 0))
      return bad_field("temperature", "must be a number >= 0");
    s.temperature = j["temperature"].get<double>();
  }
  if (present("top_p")) {
    const double p = j["top_p"].is_number() ? j["top_p"].get<double>() : -1;
    if (!(p > 0 && p <= 1)) return bad_field("top_p", "must be a number in (0, 1]");
    s.top_p = p;
  }
  if (present("top_k")) {
    if (!j["top_k"].is_number_integer()) return bad_field("top_k", "must be an integer");
    s.top_k = std::max<std::int64_t>(0, j["top_k"].get<std::int64_t>());
  }
  if (present("seed")) {
    if (!j["seed"].is_number_integer()) return bad_field("seed", "must be an integer");
    s.seed = j["seed"].is_number_unsigned() ? j["seed"].get<std::uint64_t>()
                                            : std::uint64_t(j["seed"].get<std::int64_t>());
  } else {
    std::lock_guard lk(rng_mu);
    s.seed = rng();
  }
  if (present("stop")) {
    const json& st = j["stop"];
    if (st.is_string()) {
      s.stop_strings.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      for (const auto& x : st) {
        if (!x.is_string()) return bad_field("stop", "must be a string or an array of strings");
        s.stop_strings.push_back(x.get<std::string>());
      }
    } else {
      return bad_field("stop", "must be a string or an array of strings");
    }
    for (const auto& x : s.stop_strings)
      if (x.empty()) return bad_field("stop", "an empty stop string");
  }
  bool ignore_eos = false;
  if (present("ignore_eos")) {
    if (!j["ignore_eos"].is_boolean()) return bad_field("ignore_eos", "must be true or false");
    ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (!ignore_eos) s.stop_tokens = default_stop;
  if (present("stop_token_ids")) {
    if (!j["stop_token_ids"].is_array()) return bad_field("stop_token_ids", "must be an array");
    for (const auto& x : j["stop_token_ids"]) {
      if (!x.is_number_integer()) return bad_field("stop_token_ids", "must hold integers");
      s.stop_tokens.push_back(x.get<std::int64_t>());
    }
  }
  if (present("logprobs")) {
    const json& l = j["logprobs"];
    if (l.is_boolean()) {
      a.logprobs = l.get<bool>();
    } else if (!a.chat && l.is_number_integer() && l.get<std::int64_t>() >= 0) {
      a.logprobs = true;
    } else {
      return bad_field("logprobs", a.chat ? "must be true or false" : "must be an integer >= 0");
    }
  }
  if (present("return_tokens_as_token_ids")) {
    if (!j["return_tokens_as_token_ids"].is_boolean())
      return bad_field("return_tokens_as_token_ids", "must be true or false");
    a.token_id_strings = j["return_tokens_as_token_ids"].get<bool>();
  }
  return std::nullopt;
}

// The text of a content field: a string, null, or an array of {"type": "text", "text": ...}.
std::optional<Reply> read_content(const json& c, const std::string& param, std::string& out) {
  if (c.is_null()) return std::nullopt;
  if (c.is_string()) {
    out = c.get<std::string>();
    return std::nullopt;
  }
  if (c.is_array()) {
    for (const auto& part : c) {
      if (!part.is_object() || !part.contains("text") || !part["text"].is_string())
        return bad_field(param, "content parts must be {\"type\": \"text\", \"text\": ...}");
      out += part["text"].get<std::string>();
    }
    return std::nullopt;
  }
  return bad_field(param, "must be a string, null or an array of text parts");
}

std::optional<Reply> read_messages(const json& j, std::vector<ChatMessage>& out) {
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
    return bad_field("messages", "must be a non-empty array");
  for (std::size_t i = 0; i < j["messages"].size(); ++i) {
    const json& m = j["messages"][i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return bad_field(at + ".role", "is missing or not a string");
    const std::string role = m["role"].get<std::string>();
    ChatMessage cm;
    if (role == "system" || role == "developer") {
      cm.role = ChatRole::kSystem;
    } else if (role == "user") {
      cm.role = ChatRole::kUser;
    } else if (role == "assistant") {
      cm.role = ChatRole::kAssistant;
    } else if (role == "tool") {
      cm.role = ChatRole::kTool;
    } else {
      return bad_field(at + ".role", "must be system, user, assistant or tool");
    }
    if (m.contains("content")) {
      if (auto r = read_content(m["content"], at + ".content", cm.content)) return r;
    }
    if (cm.role == ChatRole::kAssistant && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (!m["tool_calls"].is_array()) return bad_field(at + ".tool_calls", "must be an array");
      for (std::size_t k = 0; k < m["tool_calls"].size(); ++k) {
        const json& call = m["tool_calls"][k];
        const std::string cat = at + ".tool_calls[" + std::to_string(k) + "].function";
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
          return bad_field(cat, "is missing or not an object");
        const json& f = call["function"];
        if (!f.contains("name") || !f["name"].is_string())
          return bad_field(cat + ".name", "is missing or not a string");
        ChatToolCall tc{.name = f["name"].get<std::string>()};
        if (f.contains("arguments")) {
          tc.arguments_json = f["arguments"].is_string() ? f["arguments"].get<std::string>()
                                                         : f["arguments"].dump();
        }
        cm.tool_calls.push_back(std::move(tc));
      }
    }
    out.push_back(std::move(cm));
  }
  return std::nullopt;
}

std::optional<Reply> read_tools(const json& j, std::vector<std::string>& out) {
  if (!j.contains("tools") || j["tools"].is_null()) return std::nullopt;
  if (!j["tools"].is_array()) return bad_field("tools", "must be an array");
  for (std::size_t i = 0; i < j["tools"].size(); ++i) {
    if (!j["tools"][i].is_object())
      return bad_field("tools[" + std::to_string(i) + "]", "must be an object");
    out.push_back(j["tools"][i].dump());
  }
  return std::nullopt;
}

// The prompt of /v1/completions: text, ids, or a one-element array of either.
std::optional<Reply> read_prompt(const json& j, const Tokenizer& tok,
                                 std::vector<std::int64_t>& out) {
  if (!j.contains("prompt")) return bad_field("prompt", "is missing");
  const json* p = &j["prompt"];
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    auto ids = tok.encode(p->get<std::string>());
    if (!ids) return bad_field("prompt", ids.error().message);
    out.assign(ids->begin(), ids->end());
    return std::nullopt;
  }
  if (p->is_array() && !p->empty()) {
    for (const auto& x : *p) {
      if (!x.is_number_integer()) return bad_field("prompt", "token ids must be integers");
      out.push_back(x.get<std::int64_t>());
    }
    return std::nullopt;
  }
  return bad_field("prompt", "must be text, an array of token ids, or one of those in an array");
}

// cuda-agent's `context_token_ids` (chat): the conversation so far as exact ids; absent or empty:
// none.
std::optional<Reply> read_context_ids(const json& j, const Tokenizer& tok,
                                      std::vector<std::int64_t>& out) {
  if (!j.contains("context_token_ids") || j["context_token_ids"].is_null()) return std::nullopt;
  const json& c = j["context_token_ids"];
  if (!c.is_array()) return bad_field("context_token_ids", "must be an array of token ids");
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!c[i].is_number_integer() || c[i].get<std::int64_t>() < 0 ||
        c[i].get<std::int64_t>() >= vocab) {
      return bad_field("context_token_ids[" + std::to_string(i) + "]",
                       "must be a token id in [0, " + std::to_string(vocab) + ")");
    }
    out.push_back(c[i].get<std::int64_t>());
  }
  return std::nullopt;
}

std::string finish_reason(const EngineJobOutcome& o) {
  return o.finish == "max_new_tokens" ? "length" : "stop";
}

}  // namespace

std::string engine_chat_message_json(std::string_view text, std::uint64_t request_id,
                                     bool* has_tool_calls) {
  ParsedAssistant parsed = parse_assistant(text);
  json message = {{"role", "assistant"}};
  if (has_tool_calls) *has_tool_calls = false;
  if (!parsed.problems.empty()) {  // the client's parser reports the malformed blocks
    message["content"] = std::string(text);
    return dump(message);
  }
  message["content"] =
      parsed.content.empty() && !parsed.tool_calls.empty() ? json(nullptr) : json(parsed.content);
  if (!parsed.reasoning.empty()) message["reasoning_content"] = parsed.reasoning;
  if (!parsed.tool_calls.empty()) {
    json calls = json::array();
    for (std::size_t k = 0; k < parsed.tool_calls.size(); ++k) {
      calls.push_back({{"id", "call_" + std::to_string(request_id) + "_" + std::to_string(k)},
                       {"type", "function"},
                       {"function",
                        {{"name", parsed.tool_calls[k].name},
                         {"arguments", parsed.tool_calls[k].arguments_json}}}});
    }
    message["tool_calls"] = std::move(calls);
    if (has_tool_calls) *has_tool_calls = true;
  }
  return dump(message);
}

struct EngineServer::Http {
  EngineServerOptions options;
  EngineServer* owner = nullptr;
  std::optional<ChatFormat> chat;
  httplib::Server svr;
  std::thread thread;
  std::mt19937_64 rng{std::random_device{}()};
  std::mutex rng_mu;
  std::atomic<bool> draining{false};
  std::mutex inflight_mu;
  std::condition_variable inflight_cv;
  std::int64_t inflight = 0;  // generation replies not yet written

  EngineCore& core() { return *owner->core_; }
  void send(httplib::Response& res, const Reply& r) {
    res.status = r.status;
    res.set_content(dump(r.body), "application/json");
  }

  std::optional<Reply> refuse_if_draining() {
    if (!draining.load()) return std::nullopt;
    return error_reply(503, make_error(ErrorCategory::kUnavailable, "engine.draining",
                                       "the engine is draining: no new requests"));
  }

  void generate(const httplib::Request& req, httplib::Response& res, bool is_chat);
  json build_reply(const GenerationAsk& a, const EngineJob& job);
  void health(httplib::Response& res);
  void load_weights(const httplib::Request& req, httplib::Response& res);
  void install();
};

json EngineServer::Http::build_reply(const GenerationAsk& a, const EngineJob& job) {
  const EngineJobOutcome& o = job.outcome();
  const Tokenizer& tok = core().tokenizer();
  // The text: without a final stop token; cut before a stop string (as OpenAI does). The ids
  // stay verbatim in token_ids.
  std::span<const std::int64_t> shown(o.tokens);
  if (o.finish == "stop_token" && !shown.empty()) shown = shown.first(shown.size() - 1);
  std::string text = engine_detokenize(tok, shown);
  if (o.finish == "stop_string") {
    std::size_t cut = std::string::npos;
    for (const auto& s : job.params().stop_strings) cut = std::min(cut, text.find(s));
    if (cut != std::string::npos) text.resize(cut);
  }
  // Decoded pieces are bytes; a reply is UTF-8 (replaced where invalid at dump time).
  json token_ids = o.tokens;
  auto token_name = [&](std::int64_t id) {
    if (a.token_id_strings) return "token_id:" + std::to_string(id);
    return engine_detokenize(tok, std::span<const std::int64_t>(&id, 1));
  };
  json choice = {{"index", 0},
                 {"token_ids", std::move(token_ids)},
                 {"first_policy_version", o.first_policy_version},
                 {"last_policy_version", o.last_policy_version},
                 {"stop_reason", o.finish}};
  std::string finish = finish_reason(o);
  if (a.chat) {
    bool has_calls = false;
    json message = json::parse(engine_chat_message_json(text, job.id(), &has_calls));
    if (has_calls && finish == "stop") finish = "tool_calls";
    choice["message"] = std::move(message);
    if (a.logprobs) {
      json content = json::array();
      for (std::size_t k = 0; k < o.tokens.size(); ++k)
        content.push_back({{"token", token_name(o.tokens[k])},
                           {"logprob", o.logprobs[k]},
                           {"top_logprobs", json::array()}});
      choice["logprobs"] = {{"content", std::move(content)}};
    } else {
      choice["logprobs"] = nullptr;
    }
  } else {
    choice["text"] = text;
    if (a.logprobs) {
      json tokens = json::array();
      for (auto id : o.tokens) tokens.push_back(token_name(id));
      choice["logprobs"] = {
          {"tokens", std::move(tokens)}, {"token_logprobs", o.logprobs}, {"top_logprobs", nullptr}};
    } else {
      choice["logprobs"] = nullptr;
    }
  }
  choice["finish_reason"] = finish;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {{"id", (a.chat ? "chatcmpl-" : "cmpl-") + std::to_string(job.id())},
          {"object", a.chat ? "chat.completion" : "text_completion"},
          {"created", std::chrono::duration_cast<std::chrono::seconds>(now).count()},
          {"model", owner->model_name_},
          {"policy_version", o.last_policy_version},
          {"prompt_token_ids", job.prompt()},
          {"choices", json::array({std::move(choice)})},
          {"usage",
           {{"prompt_tokens", job.prompt().size()},
            {"completion_tokens", o.tokens.size()},
            {"total_tokens", job.prompt().size() + o.tokens.size()}}}};
}

void EngineServer::Http::generate(const httplib::Request& req, httplib::Response& res,
                                  bool is_chat) {
  if (auto r = refuse_if_draining()) return send(res, *r);
  const json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return send(res, bad_field("body", "is not valid JSON"));
  if (!j.is_object()) return send(res, bad_field("body", "must be a JSON object"));
  GenerationAsk a;
  a.chat = is_chat;
  const std::string prompt_param = is_chat ? "messages" : "prompt";
  if (is_chat) {
    if (!chat) {
      return send(res,
                  error_reply(400, make_error(ErrorCategory::kInvalidInput, "engine.no_chat_format",
                                              "this model's tokenizer has no ChatML tokens")));
    }
    std::vector<ChatMessage> messages;
    std::vector<std::string> tools;
    if (auto r = read_messages(j, messages)) return send(res, *r);
    if (auto r = read_tools(j, tools)) return send(res, *r);
    std::vector<std::int64_t> context;
    if (auto r = read_context_ids(j, core().tokenizer(), context)) return send(res, *r);
    if (context.empty()) {
      auto text = chat->render(messages, tools, /*add_generation_prompt=*/true);
      if (!text) return send(res, bad_field("messages", text.error().message));
      auto ids = core().tokenizer().encode(*text);
      if (!ids) return send(res, bad_field("messages", ids.error().message));
      a.prompt.assign(ids->begin(), ids->end());
    } else {
      // Token-exact continuation: the ids so far verbatim, then only what follows the last
      // assistant message, rendered and tokenized on its own.
      std::size_t after = messages.size();
      while (after > 0 && messages[after - 1].role != ChatRole::kAssistant) --after;
      if (after == 0) {
        return send(res, bad_field("context_token_ids",
                                   "needs an assistant message in `messages` (the ids cover the "
                                   "conversation up to the end of the last one)"));
      }
      const std::string text =
          chat->render_continuation(std::span(messages).subspan(after),
                                    context.back() == static_cast<std::int64_t>(chat->im_end()),
                                    /*add_generation_prompt=*/true);
      auto ids = core().tokenizer().encode(text);
      if (!ids) return send(res, bad_field("messages", ids.error().message));
      a.prompt = std::move(context);
      a.prompt.insert(a.prompt.end(), ids->begin(), ids->end());
    }
  } else if (auto r = read_prompt(j, core().tokenizer(), a.prompt)) {
    return send(res, *r);
  }
  if (auto r = read_sampling(j, core().default_stop_tokens(), rng, rng_mu, a)) return send(res, *r);
  const std::int64_t limit = core().max_seq_len();
  const std::int64_t n = std::int64_t(a.prompt.size());
  if (!a.max_tokens_given) a.sampling.max_new_tokens = std::max<std::int64_t>(1, limit - n);
  const std::int64_t max_tokens = a.sampling.max_new_tokens;
  auto job = core().submit(a.prompt, a.sampling);
  if (!job) {
    json extra = json::object();
    if (job.error().code == "engine.context_limit") {
      extra = {{"param", a.max_tokens_given ? "max_tokens" : prompt_param},
               {"limit", limit},
               {"prompt_tokens", n},
               {"max_tokens", max_tokens}};
    }
    return send(res, error_reply(status_of(job.error()), job.error(), extra));
  }
  {
    std::lock_guard lk(inflight_mu);
    ++inflight;
  }
  auto ctx = std::make_shared<std::pair<GenerationAsk, EngineJobPtr>>(std::move(a), *job);
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.request_timeout_ms);
  res.set_chunked_content_provider(
      "application/json",
      [this, ctx, deadline](std::size_t, httplib::DataSink& sink) {
        const EngineJobPtr& jp = ctx->second;
        while (!jp->wait_until(Clock::now() + std::chrono::milliseconds(20))) {
          if (!sink.is_writable()) {  // the client went away: free the slot
            core().cancel(jp);
            return false;
          }
          if (Clock::now() > deadline) {
            core().cancel(jp);
            const std::string body =
                dump(error_reply(504, make_error(ErrorCategory::kTimeout, "engine.timeout",
                                                 "no answer within request_timeout_ms"))
                         .body);
            sink.write(body.data(), body.size());
            sink.done();
            return true;
          }
        }
        const EngineJobOutcome& o = jp->outcome();
        const std::string body = o.error ? dump(error_reply(status_of(*o.error), *o.error).body)
                                         : dump(build_reply(ctx->first, *jp));
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      },
      [this, ctx](bool) {
        if (!ctx->second->done()) core().cancel(ctx->second);
        {
          std::lock_guard lk(inflight_mu);
          --inflight;
        }
        inflight_cv.notify_all();
      });
}

void EngineServer::Http::health(httplib::Response& res) {
  const EngineHealth h = core().health();
  json j = {{"status", draining.load() && h.status == "ok" ? "draining" : h.status},
            {"model", owner->model_name_},
            {"policy_version", h.policy_version},
            {"queue_depth", h.queue_depth},
            {"running", h.running},
            {"slots", h.slots},
            {"max_seq_len", h.max_seq_len},
            {"steps", h.steps},
            {"max_running", h.max_running},
            {"tokens_generated", h.tokens_generated},
            {"requests_done", h.jobs_done},
            {"requests_cancelled", h.jobs_cancelled},
            {"swaps", h.swaps},
            {"last_swap_pause_ms", h.last_swap_pause_ms}};
  send(res, {h.status == "failed" ? 503 : 200, std::move(j)});
}

void EngineServer::Http::load_weights(const httplib::Request& req, httplib::Response& res) {
  const json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return send(res, bad_field("body", "is not valid JSON"));
  if (!j.is_object()) return send(res, bad_field("body", "must be a JSON object"));
  if (!j.contains("path") || !j["path"].is_string() || j["path"].get<std::string>().empty())
    return send(res, bad_field("path", "must be a checkpoint directory"));
  if (!j.contains("version") || !j["version"].is_number_integer())
    return send(res, bad_field("version", "must be an integer"));
  auto r = core().load_weights(j["path"].get<std::string>(), j["version"].get<std::int64_t>());
  if (!r) return send(res, error_reply(status_of(r.error()), r.error()));
  send(res, {200, json{{"version", r->version},
                       {"previous_version", r->previous_version},
                       {"load_ms", r->load_ms},
                       {"pause_ms", r->pause_ms},
                       {"swap_ms", r->swap_ms},
                       {"step_before_ms", r->step_before_ms}}});
}

void EngineServer::Http::install() {
  const int threads =
      options.http_threads > 0 ? options.http_threads : int(2 * options.core.max_batch + 16);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };
  svr.set_keep_alive_max_count(1000);
  svr.set_payload_max_length(std::size_t(256) << 20);
  svr.Post("/v1/completions",
           [this](const httplib::Request& q, httplib::Response& s) { generate(q, s, false); });
  svr.Post("/v1/chat/completions",
           [this](const httplib::Request& q, httplib::Response& s) { generate(q, s, true); });
  svr.Get("/health", [this](const httplib::Request&, httplib::Response& s) { health(s); });
  svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& s) {
    send(s, {200, json{{"object", "list"},
                       {"data", json::array({{{"id", owner->model_name_},
                                              {"object", "model"},
                                              {"owned_by", "cuda-agent"},
                                              {"max_model_len", core().max_seq_len()}}})}}});
  });
  svr.Post("/v1/weights/load",
           [this](const httplib::Request& q, httplib::Response& s) { load_weights(q, s); });
}

Expected<std::unique_ptr<EngineServer>> EngineServer::create(const EngineServerOptions& o) {
  std::unique_ptr<EngineServer> server(new EngineServer());
  ASSIGN_OR_RETURN(server->core_, EngineCore::create(o.core));
  server->model_name_ = o.model_name;
  if (server->model_name_.empty()) {
    std::filesystem::path p(o.core.model_dir);
    server->model_name_ = (p.has_filename() ? p : p.parent_path()).filename().string();
  }
  server->http_ = std::make_unique<Http>();
  Http& h = *server->http_;
  h.options = o;
  h.owner = server.get();
  if (auto f = ChatFormat::create(server->core_->shared_tokenizer())) h.chat.emplace(std::move(*f));
  h.install();
  if (o.port == 0) {
    server->port_ = h.svr.bind_to_any_port(o.host);
    if (server->port_ <= 0)
      return make_error(ErrorCategory::kUnavailable, "engine.bind",
                        o.host + ": cannot bind a port");
  } else {
    if (!h.svr.bind_to_port(o.host, o.port))
      return make_error(ErrorCategory::kUnavailable, "engine.bind",
                        o.host + ":" + std::to_string(o.port) + ": cannot bind");
    server->port_ = o.port;
  }
  return server;
}

Status EngineServer::start() {
  Http* h = http_.get();
  h->thread = std::thread([h] { h->svr.listen_after_bind(); });
  // stop() only stops a server that is running: wait for it to be.
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (!h->svr.is_running() && Clock::now() < end) std::this_thread::yield();
  if (!h->svr.is_running())
    return make_error(ErrorCategory::kUnavailable, "engine.listen",
                      "the HTTP server did not start");
  return Status::ok();
}

bool EngineServer::drain() {
  http_->draining.store(true);
  core_->drain();
  const auto deadline = Clock::now() + std::chrono::milliseconds(http_->options.drain_timeout_ms);
  bool in_time = core_->wait_idle(deadline);
  if (!in_time) {
    core_->abort_all(
        make_error(ErrorCategory::kUnavailable, "engine.drain_deadline",
                   "the engine stopped before this request finished (drain deadline)"));
  }
  {  // the answers of finished jobs are written before the listener goes
    std::unique_lock lk(http_->inflight_mu);
    in_time &= http_->inflight_cv.wait_until(
        lk, in_time ? deadline : Clock::now() + std::chrono::seconds(2),
        [&] { return http_->inflight == 0; });
  }
  stop();
  return in_time;
}

void EngineServer::stop() {
  if (!http_) return;
  http_->draining.store(true);
  core_->drain();
  // Handlers wait on their jobs: end those first, or the pool's join would wait for them.
  core_->abort_all(
      make_error(ErrorCategory::kUnavailable, "engine.stopped", "the server is stopping"));
  http_->svr.stop();
  if (http_->thread.joinable()) http_->thread.join();
}

EngineServer::~EngineServer() {
  stop();
  core_.reset();  // ends the engine thread before the handlers' state goes
}

}  // namespace cuda_agent
