#pragma once

// Internal to the request actor (request_actor.cpp: its life, admission, deadlines and answers;
// request_compile.cpp: its constraint's compile; request_route.cpp: routing an attempt to a
// prefill and a decode rank; request_prefilled.cpp: the prefill's answer; request_vision.cpp:
// its images to vision ranks): its state, shared by those files.

#include <chrono>
#include <memory>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/entrypoint/admission_control.hpp"
#include "actors/entrypoint/background_events.hpp"
#include "actors/messages.hpp"
#include "recipe/stream/api_output.hpp"
#include "actors/entrypoint/balancer_claim.hpp"
#include "actors/entrypoint/entrypoint.hpp"
#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/request_timeline.hpp"
#include "actors/http/response_writer.hpp"
#include "kv/hash_chain.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/stream/stream_parser.hpp"

namespace deepinfer::actors {

/// One of a request's choices (OpenAI's `n`; one for every other request): what it generated,
/// its output, and its own attempts on the ranks. The first attempt of every sample rides on
/// sample 0's (one prefill job whose KV the decode rank starts each sample from); a sample that
/// loses its rank then goes alone, with the prompt and what it generated so far.
struct sample_state {
  int index = 0;
  /// The request's sampling settings with this sample's seed (the request's + index).
  engine::sampling_params sampling;
  std::vector<int32_t> generated;
  /// Drafts its ranks verified and accepted (a request with a prediction: its prediction's).
  int64_t drafted = 0;
  int64_t accepted = 0;
  std::unique_ptr<recipe::stream_parser> parser;
  std::unique_ptr<recipe::api_output> out;
  /// How the answer ended (the parser's finish event), for the finished_reason metric.
  recipe::finish_reason finish = recipe::finish_reason::stop;
  /// Id of the current attempt's job: token batches of an earlier attempt are ignored.
  uint64_t job = 0;
  int attempts = 0;
  /// This attempt rides on sample 0's first one: its job is one of that prefill job's
  /// `samples`, its KV space sample 0's decode claim.
  bool rides = false;
  caf::actor decode_rank;
  /// The prefill rank working on the current attempt (monitored: a request to a dead remote
  /// actor never fails by itself in CAF 0.17); null once it answered, and for a sample that rides.
  caf::actor prefill_rank;
  /// What the balancers placed for the current attempt; released when the prefill answers /
  /// the attempt or the request ends.
  std::unique_ptr<balancer_claim> prefill_claim;
  std::unique_ptr<balancer_claim> decode_claim;
  /// The current attempt's prefill answered (its first token is out): token batches of the
  /// decode rank that overtook that answer wait in `early` until then.
  bool prefilled = false;
  std::vector<token_batch> early;
  /// A token batch of the current attempt came from its decode rank: its KV arrived there. A
  /// prefilled attempt without one for `decode_start_timeout` is resubmitted (the KV message can
  /// be lost with a connection that dropped, e.g. a frozen prefill node's).
  bool decoding = false;
  /// The KV transport of the current attempt (for the bytes the decode rank reports); none
  /// until its prefill answered.
  std::optional<kv_transport_kind> transport;
  /// A handoff (a draining decode rank offered the sequence, issue 17): when the offer came
  /// (set until the new rank's first tokens), and the old rank, watched until it says the KV left.
  std::optional<std::chrono::steady_clock::time_point> move_offered;
  caf::actor moving_from;
  /// A decode rank could not receive this sample's KV over RDMA: later attempts avoid RDMA.
  bool rdma_failed = false;
  /// Its answer is complete.
  bool done = false;
  /// The prompt's part of its output (echo, prompt_logprobs) went out before its first token.
  bool echoed = false;
  std::chrono::steady_clock::time_point last_token;
};

struct request_state {
  std::shared_ptr<entrypoint::context> ctx;
  std::shared_ptr<http::response_writer> writer;
  recipe::conversation conv;
  std::vector<int32_t> prompt;
  /// The structured-output constraint compiled by a compiler actor (request_compile.cpp): the
  /// shortest output it accepts, in tokens. Unset: none compiled (prepare compiles, if needed).
  std::optional<int64_t> format_shortest;
  /// Inline images the lowered-priority parser decoded with a large body (request_parse.cpp);
  /// prepare takes them from here (emptied then) instead of decoding them on a CAF worker.
  decoded_inline_images predecoded;
  /// Prompt logprobs (`echo` with `logprobs`, vLLM's `prompt_logprobs`): one entry per prompt
  /// token, the first null (NaN), the others as the prefill scored them (`keep_prompt_scores`;
  /// empty until it answered), shared by every choice.
  std::vector<recipe::token_logprob> prompt_entries;
  kv::cache_salt salt;
  /// The prompt's decoded images (sent with every attempt's prefill job) and their marks (how
  /// the prefix cache keys the prompt).
  std::vector<prompt_image> images;
  std::vector<kv::image_mark> image_marks;
  /// Images out at vision ranks; the request is placed once they are all back. Sent once per
  /// request: an image that comes back without embeddings is encoded by the prefill rank.
  int vision_pending = 0;
  bool vision_sent = false;
  kv::traffic_class traffic = kv::traffic_class::chatbot;
  /// The choices, index = choice (one unless the request asked for `n`).
  std::vector<sample_state> samples;
  /// Prompt and cached tokens; the completion counts are the samples' sums (`usage_now`).
  recipe::usage_counts usage;
  uint64_t id = 0;
  /// The API key the request came with (its tenant: prefix-cache namespace, stored responses).
  std::string tenant;
  /// The public id in the API's style (`resp_…`, `chatcmpl-…`).
  std::string public_id;
  /// Admission: the place in line while waiting, then the ticket (held until the request ends).
  std::shared_ptr<admission_control::waiter> waiting;
  std::unique_ptr<admission_control::ticket> ticket;
  /// Ranks this request saw die, with when (ms since the Unix epoch, the membership view's
  /// clock): their supervisor may still hand them out for a moment (it learns of the death by
  /// its own monitor), and a resubmission must not pick them again, unless their node registered
  /// again since (a node frozen past the heartbeat timeout, then thawed: the same rank serves on).
  std::map<caf::actor_addr, int64_t> dead;
  /// The SSE head is out (only once admitted, or a background turn's at once: a refusal before
  /// is a plain error response).
  bool streaming = false;
  /// A background Responses turn whose create call is answered (the body `queued`, or the
  /// stream's head): however it ends, it ends in the response store.
  bool background_answered = false;
  /// A background turn's events (every SSE byte its writer wrote), for GET `stream=true`.
  std::shared_ptr<background_events> background_log;
  /// Messages: the stream's first event (`message_start`, whose usage has the input tokens
  /// split by the prefix-cache hit) waits for the first token, when the hit is known.
  bool start_event_pending = false;
  bool done = false;
  /// The first token of any sample is out (time to first token).
  bool first_token_out = false;
  /// Where its time went (sample 0's attempts): the Server-Timing header and stage histogram.
  request_timeline timeline;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
  /// Last time the request moved (admitted, prefilled, a token): the stall timeout counts from it.
  std::chrono::steady_clock::time_point progress;
  /// Tells the current deadline timer from stale ones.
  uint64_t timer = 0;
  static inline const char* name = "deepinfer.request";

  /// The sample whose current attempt is `job`; null when none.
  sample_state* sample_of_job(uint64_t job) {
    for (auto& s : samples)
      if (s.job == job)
        return &s;
    return nullptr;
  }
  /// Tokens generated by all samples.
  int64_t generated_tokens() const {
    int64_t n = 0;
    for (const auto& s : samples)
      n += static_cast<int64_t>(s.generated.size());
    return n;
  }
  /// `usage` with the samples' completion and reasoning tokens summed.
  recipe::usage_counts usage_now() const {
    auto u = usage;
    u.completion_tokens = generated_tokens();
    u.reasoning_tokens = 0;
    for (const auto& s : samples)
      if (s.parser)
        u.reasoning_tokens += s.parser->counts().reasoning_tokens;
    if (!conv.sampling.prediction.empty())
      for (const auto& s : samples) {
        u.accepted_prediction_tokens += s.accepted;
        u.rejected_prediction_tokens += s.drafted - s.accepted;
      }
    return u;
  }
};

using request_pointer = caf::stateful_actor<request_state>*;

/// What `(cancel, why)` to a request actor says: the client went away (0), or a background
/// turn's client asked for its cancel (`POST /v1/responses/{id}/cancel`).
inline constexpr uint64_t client_went_away = 0;
inline constexpr uint64_t client_cancelled = ~uint64_t{0};

/// How long a request waits for a balancer's answer (place, grow).
inline constexpr auto handle_timeout = std::chrono::seconds(5);

/// request_route.cpp: the key a balancer knows an attempt by: unique in the cluster (the
/// entrypoint's random tag above the attempt's job id).
uint64_t balancer_key(request_pointer self, uint64_t job);

inline sample_state& sample(request_pointer self, int i) {
  return self->state.samples[static_cast<std::size_t>(i)];
}

/// Ends stage `s` of the request's timeline when sample `i` is the one it follows (sample 0:
/// every request has it, and the others' first attempts ride on it).
inline void close_stage(request_pointer self, int i, request_timeline::stage s) {
  if (i == 0)
    self->state.timeline.close(s);
}

/// Whether `job` is still sample `i`'s current attempt (the request and the sample go on).
inline bool current(request_pointer self, int i, uint64_t job) {
  return !self->state.done && !sample(self, i).done && sample(self, i).job == job;
}

/// request_route.cpp: a rank handle the request may use: present, and not seen dead unless the
/// node of its `instance` registered again since.
bool usable(request_pointer self, const caf::strong_actor_ptr& rank, const std::string& instance);

/// request_actor.cpp: feeds sample `i`'s tokens out to the client (and ends the sample, and
/// once all have, the request, when they finish). `lp`: the tokens' log-probabilities (empty
/// when the request did not ask for them).
void on_tokens(request_pointer self, int i, const std::vector<int32_t>& ids, bool finished, const token_logprobs& lp);
/// prompt_echo.cpp: the engine's log-probabilities `lp` of `ids` with each token's (and each
/// alternative's) bytes, or with `as_ids` (vLLM's `return_tokens_as_token_ids`) `token_id:N`.
std::vector<recipe::token_logprob> logprob_entries(const recipe::tokenizer& tok, const std::vector<int32_t>& ids,
                                                   const token_logprobs& lp, bool as_ids = false);
/// prompt_echo.cpp: the prefill's scores of the prompt (prefill_result::prompt_logprobs) as the
/// entries every choice's output reads (request_state::prompt_entries).
void keep_prompt_scores(request_pointer self, const token_logprobs& scores);
/// prompt_echo.cpp: the prompt's part of sample `i`'s output, once, before its first token:
/// legacy Completions' `echo` (the prompt's text, with its scores when `logprobs` was asked) and
/// vLLM's `prompt_logprobs` (for the body). False when the request failed instead (the scores
/// did not come).
bool write_prompt_part(request_pointer self, int i);
/// request_actor.cpp: ends the request with the API's error (`status` 5xx; a stream gets the
/// error event), cancelling what runs on the ranks.
void fail(request_pointer self, int status, const std::string& message);

/// request_finish.cpp: stops whatever runs on the ranks for this request (every sample's
/// current attempt).
void cancel_ranks(request_pointer self);
/// request_finish.cpp: a Responses turn with `store` (the default) is kept for GET and a later
/// `previous_response_id` with `body` as its response object; a background turn's replaces its
/// `queued` entry (unless the client deleted it).
void store_response(request_state& st, const std::string& body);
/// request_finish.cpp: a background turn starts: its response is stored `queued` and the create
/// call answered with it (or, streaming, the stream's head goes out now).
void answer_background(request_pointer self);
/// request_finish.cpp: the request is over before its answer (its client went away or cancelled
/// it): counted as aborted, its place in the admission line or on the ranks given up.
void stop_in_flight(request_pointer self);
/// request_finish.cpp: a background turn's client asked for its cancel: the ranks stop, the
/// response is stored `cancelled` with what was generated; the actor quits.
void cancel_background(request_pointer self);
/// request_finish.cpp: every sample's answer is complete: the stream's end, or the body with
/// every choice (a Responses turn with `store` is kept); the actor quits.
void finish_ok(request_pointer self);
/// request_finish.cpp: ends the request with an error of `status`, `type` (the API's error
/// type) and `code`: a started stream gets the API's error event and its end; otherwise an
/// error body that carries what was generated so far when there is any.
void end_with_error(request_pointer self, int status, std::string type, std::string code, const std::string& message);

/// request_prefilled.cpp: counts the KV bytes a decode rank reports for sample `i`'s attempt.
void count_kv_bytes(request_pointer self, int i, const token_batch& b);
/// request_route.cpp: one attempt of sample `i` (prefill prompt + its tokens so far, then
/// decode the rest); sample 0's first attempt carries every sample's.
void attempt(request_pointer self, int i);
/// request_prefilled.cpp: sample `i`'s prefill answered `r` (for its current attempt): the first
/// token (and the riding samples' own) out, or the request failed.
void on_prefilled(request_pointer self, int i, prefill_result& r);
/// request_prefilled.cpp: the watchdog of attempt `job`'s decode start (`(decode, job)`, sent to
/// itself when its prefill answered): no token from its decode rank yet, so its KV was lost on
/// the way: the sample is resubmitted.
void check_decode_started(request_pointer self, uint64_t job);
/// request_route.cpp: places sample `i`'s current attempt again (after a wait for capacity).
void place(request_pointer self, int i);
/// request_route.cpp: tells the decode balancer how long sample `i`'s KV is now (every block's
/// worth of generated tokens), counting the samples that ride on its claim.
void report_growth(request_pointer self, int i);
/// request_route.cpp: sample `i`'s prefill rank is gone (down, or its answer lost): it, and the
/// samples that ride on it and wait for their first token, try again.
void prefill_lost(request_pointer self, int i);
/// request_handoff.cpp: a draining decode rank (`current_sender`) offers sequence `job` (one
/// sample's) for a handoff: a rank of another decode instance from the decode balancer, or
/// "stay" without one.
void on_move_offer(request_pointer self, uint64_t job);
/// request_handoff.cpp: the old rank's word that sequence `job`'s KV left for the new rank (`err`
/// none) or could not (the sample is resubmitted).
void on_moved(request_pointer self, uint64_t job, const caf::error& err);
/// request_handoff.cpp: the first tokens of sample `i`'s attempt after a handoff came: counted.
void on_handoff_done(request_pointer self, int i);
/// request_route.cpp: stops watching `rank` unless another sample still decodes, prefills or
/// moves there (samples that rode together share one monitor).
void unwatch(request_pointer self, const caf::actor& rank);

/// request_parse.cpp: a request once its body is parsed: answered at once when `conv` is an
/// error, else its image URLs fetched and its constraint compiled, then started; an empty
/// behavior when it was answered already.
caf::behavior after_parse(request_pointer self, expected<recipe::conversation, recipe::api_error> conv);

/// request_parse.cpp: parses a large body (`[vision] background_body_bytes`: inline images,
/// in practice) on the entrypoint's lowered-priority thread instead of this actor's CAF worker,
/// then goes on with `after_parse`; a client gone meanwhile ends the request.
caf::behavior parse_in_background(request_pointer self, recipe::api_kind api, std::string body, std::string tenant);

/// request_actor.cpp: the rest of a request once its images are at hand and its constraint
/// compiled (prepare, the stream parser and encoder, admission, the behavior that carries it to
/// the end); an empty behavior when it was answered already.
caf::behavior start_request(request_pointer self, recipe::conversation conv, const fetched_images& fetched);

/// request_finish.cpp: the client went away before the request started (`while_what`: what it
/// waited for, for the log); counted as an abort, and the request ends.
void abandon_request(request_pointer self, const char* while_what);

/// request_actor.cpp: answers `e` (before anything was sent) and ends the request.
void refuse_request(request_pointer self, const recipe::api_error& e);

/// request_vision.cpp: 0. sends the request's images to vision ranks (DESIGN §6.3: the vision
/// balancer picks a random vision machine, then its rank with the fewest patches in flight); true
/// while they are out, and `place(self, placing)` runs again once all are back. An image whose
/// rank fails or times out keeps no embeddings: the prefill rank encodes it (the same encoder,
/// the same bits). An image that ends a window or more before `hit_length` (the prefix cache's
/// CHECK) is not sent: the hit holds its KV, and even a replay of the window before the hit does
/// not reach it (a prefill rank whose hit turns out shorter encodes it itself).
bool send_to_vision(request_pointer self, int placing, const membership_view& view, int64_t hit_length);

/// request_compile.cpp: has the request's structured-output constraint compiled (issue 19:
/// asynchronously, on an `so` node or this node's compiler actor), then `start_request`.
caf::behavior compile_then_start(request_pointer self, recipe::conversation conv, fetched_images fetched);

} // namespace deepinfer::actors
