#pragma once

// Internal to the request actor (request_actor.cpp: its life, admission, deadlines and answers;
// request_route.cpp: routing an attempt to a prefill and a decode rank): its state, shared by
// both files.

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "actors/entrypoint/admission_control.hpp"
#include "actors/messages.hpp"
#include "recipe/stream/api_output.hpp"
#include "actors/entrypoint/balancer_claim.hpp"
#include "actors/entrypoint/entrypoint.hpp"
#include "actors/http/response_writer.hpp"
#include "kv/hash_chain.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/stream/stream_parser.hpp"

namespace deepinfer::actors {

struct request_state {
  std::shared_ptr<entrypoint::context> ctx;
  std::shared_ptr<http::response_writer> writer;
  recipe::conversation conv;
  std::vector<int32_t> prompt;
  std::vector<int32_t> generated;
  engine::sampling_params sampling;
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
  std::unique_ptr<recipe::stream_parser> parser;
  std::unique_ptr<recipe::api_output> out;
  recipe::usage_counts usage;
  /// How the answer ended (the parser's finish event), for the finished_reason metric.
  recipe::finish_reason finish = recipe::finish_reason::stop;
  uint64_t id = 0;
  /// The API key the request came with (its tenant: prefix-cache namespace, stored responses).
  std::string tenant;
  /// The public id in the API's style (`resp_…`, `chatcmpl-…`).
  std::string public_id;
  /// Id of the current attempt's job: token batches of an earlier attempt are ignored.
  uint64_t job = 0;
  int attempts = 0;
  caf::actor decode_rank;
  /// The prefill rank working on the current attempt (monitored: a request to a dead remote
  /// actor never fails by itself in CAF 0.17); null once it answered.
  caf::actor prefill_rank;
  /// What the balancers placed for the current attempt; released when the prefill answers /
  /// the attempt or the request ends.
  std::unique_ptr<balancer_claim> prefill_claim;
  std::unique_ptr<balancer_claim> decode_claim;
  /// Admission: the place in line while waiting, then the ticket (held until the request ends).
  std::shared_ptr<admission_control::waiter> waiting;
  std::unique_ptr<admission_control::ticket> ticket;
  /// The current attempt's prefill answered (its first token is out): token batches of the
  /// decode rank that overtook that answer wait in `early` until then.
  bool prefilled = false;
  std::vector<token_batch> early;
  /// The KV transport of the current attempt (for the bytes the decode rank reports); none
  /// until its prefill answered.
  std::optional<kv_transport_kind> transport;
  /// A handoff (a draining decode rank offered the sequence, issue 17): when the offer came
  /// (set until the new rank's first tokens), and the old rank, watched until it says the KV left.
  std::optional<std::chrono::steady_clock::time_point> move_offered;
  caf::actor moving_from;
  /// Ranks this request saw die: their supervisor may still hand them out for a moment (it
  /// learns of the death by its own monitor), and a resubmission must not pick them again.
  std::set<caf::actor_addr> dead;
  /// A decode rank could not receive this request's KV over RDMA: later attempts avoid RDMA.
  bool rdma_failed = false;
  /// The SSE head is out (only once admitted: a refusal before is a plain error response).
  bool streaming = false;
  bool done = false;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_token;
  /// Last time the request moved (admitted, prefilled, a token): the stall timeout counts from it.
  std::chrono::steady_clock::time_point progress;
  /// Tells the current deadline timer from stale ones.
  uint64_t timer = 0;
  static inline const char* name = "deepinfer.request";
};

using request_pointer = caf::stateful_actor<request_state>*;

/// request_actor.cpp: feeds tokens out to the client (and ends the request when they finish).
/// `lp`: the tokens' log-probabilities (empty when the request did not ask for them).
void on_tokens(request_pointer self, const std::vector<int32_t>& ids, bool finished, const token_logprobs& lp);
/// request_actor.cpp: ends the request with the API's error (`status` 5xx; a stream gets the
/// error event), cancelling what runs on the ranks.
void fail(request_pointer self, int status, const std::string& message);

/// request_route.cpp: counts the KV bytes a decode rank reports for the current attempt.
void count_kv_bytes(request_pointer self, const token_batch& b);
/// request_route.cpp: one attempt (prefill prompt + tokens so far, then decode the rest).
void attempt(request_pointer self);
/// request_route.cpp: places the current attempt again (after a wait for capacity).
void place(request_pointer self);
/// request_route.cpp: tells the decode balancer how long the request's KV is now (every
/// block's worth of generated tokens).
void report_growth(request_pointer self);
/// request_route.cpp: a draining decode rank (`current_sender`) offers sequence `job` for a
/// handoff: a rank of another decode instance from the decode balancer, or "stay" without one.
void on_move_offer(request_pointer self, uint64_t job);
/// request_route.cpp: the old rank's word that the KV left for the new rank (`err` none) or
/// could not (the request is resubmitted).
void on_moved(request_pointer self, uint64_t job, const caf::error& err);
/// request_route.cpp: the first tokens of the current attempt after a handoff came: counted.
void on_handoff_done(request_pointer self);

} // namespace deepinfer::actors
