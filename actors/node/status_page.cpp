#include "actors/node/status_page.hpp"

#include <nlohmann/json.hpp>

#include "actors/control/membership.hpp"

namespace deepinfer::actors {

namespace {

// The page. Kept small and dependency-free: tables filled from /status.json, per-rank load and
// the KV store from /metrics, and two canvas charts of the latency histograms' p50 / p99 over the
// last two minutes (each point from the bucket deltas between two scrapes).
constexpr std::string_view page = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>DeepInfer-CAF status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:1.2em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .2em}h2{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f0f0f0}.alive,.running{color:#176f2c;font-weight:600}.dead,.failed{color:#b00020;font-weight:600}
.left,.stopped,.restarting,.starting{color:#8a6d00;font-weight:600}#err{color:#b00020}
.charts{display:flex;gap:1.5em;flex-wrap:wrap}canvas{background:#fff;border:1px solid #ddd}
small{color:#666}
</style></head><body>
<h1>DeepInfer-CAF</h1><div><small id="meta">loading…</small> <span id="err"></span></div>
<h2>Nodes</h2><table id="nodes"><thead><tr><th>node</th><th>roles</th><th>state</th><th>address</th><th>joins</th><th>since</th><th>reason</th></tr></thead><tbody></tbody></table>
<h2>Instances</h2><table id="instances"><thead><tr><th>instance</th><th>role</th><th>state</th><th>EP size (healthy / configured ranks)</th><th>generation</th><th>last failure</th></tr></thead><tbody></tbody></table>
<h2>Router load per rank</h2><table id="ranks"><thead><tr><th>rank</th><th>decode router: requests</th><th>decode router: KV tokens / capacity</th><th>prefill router: queued (quota s)</th><th>rank: active sequences</th><th>rank: prefill queue</th><th>rank: KV blocks used / total</th></tr></thead><tbody></tbody></table>
<small>router columns come from the balancers (on the controller's node), rank columns from ranks in this process</small>
<h2>KV store and prefix cache</h2><table id="kv"><tbody></tbody></table>
<h2>Autoscaler</h2><div id="autoscaler"><small>no autoscaler metrics on this node</small></div>
<h2>Latency</h2><div class="charts">
<div><div>time to first token (s): <small>p50 blue, p99 red</small></div><canvas id="ttft" width="420" height="160"></canvas></div>
<div><div>inter-token latency (s): <small>p50 blue, p99 red</small></div><canvas id="itl" width="420" height="160"></canvas></div>
</div>
<script>
'use strict';
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
function rows(id, list) { $(id).querySelector('tbody').innerHTML = list.map((r) => '<tr>' + r.map((c) => '<td' + (c && c.cls ? ' class="' + c.cls + '"' : '') + '>' + esc(c && c.cls ? c.v : c) + '</td>').join('') + '</tr>').join(''); }
// Prometheus text -> [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const p of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[p[1]] = p[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}
const series = { ttft: [], itl: [] };
let last = {};
// The p50 and p99 of the observations between two scrapes of histogram `name` (summed over
// its labels): the first bucket whose delta count reaches q of the delta total.
function quantiles(samples, name) {
  const now = {};
  for (const s of samples) if (s.name === name + '_bucket') now[s.labels.le] = (now[s.labels.le] || 0) + s.value;
  const prev = last[name] || {};
  last[name] = now;
  const les = Object.keys(now).sort((a, b) => (a === '+Inf') - (b === '+Inf') || Number(a) - Number(b));
  const total = (now['+Inf'] || 0) - (prev['+Inf'] || 0);
  const at = (q) => {
    if (!(total > 0)) return null;
    for (const le of les) if ((now[le] - (prev[le] || 0)) >= q * total) return le === '+Inf' ? null : Number(le);
    return null;
  };
  return { p50: at(0.5), p99: at(0.99) };
}
function draw(id, pts) {
  const c = $(id), g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  const ys = pts.flatMap((p) => [p.p50, p.p99]).filter((v) => v != null);
  const top = Math.max(1e-3, ...ys) * 1.1;
  g.fillStyle = '#666'; g.font = '11px sans-serif'; g.fillText(top.toPrecision(2), 2, 11); g.fillText('0', 2, c.height - 2);
  for (const [key, color] of [['p50', '#1f5fbf'], ['p99', '#c0392b']]) {
    g.strokeStyle = color; g.beginPath();
    let started = false;
    pts.forEach((p, i) => {
      if (p[key] == null) return;
      const x = 30 + (i / 119) * (c.width - 34), y = c.height - 4 - (p[key] / top) * (c.height - 16);
      if (started) g.lineTo(x, y); else { g.moveTo(x, y); started = true; }
    });
    g.stroke();
  }
}
function fmtBytes(b) { return b >= 1 << 30 ? (b / (1 << 30)).toFixed(2) + ' GiB' : b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + ' MiB' : b.toFixed(0) + ' B'; }
async function refresh() {
  try {
    const st = await (await fetch('/status.json', { cache: 'no-store' })).json();
    $('meta').textContent = 'node ' + st.node + ' · controller ' + (st.controller_connected ? 'connected' : 'not connected') +
      ' · view v' + st.view_version + ' · ' + new Date().toLocaleTimeString();
    rows('nodes', st.nodes.map((n) => [n.name, n.roles.join(', '), { v: n.state, cls: n.state }, n.host + ':' + n.port,
      n.joins, n.since_ms ? new Date(n.since_ms).toLocaleTimeString() : '', n.reason]));
    rows('instances', st.instances.map((i) => [i.instance, i.role, { v: i.state, cls: i.state },
      i.healthy_ranks + ' / ' + i.configured_ranks, i.generation, i.last_failure]));
    const m = parseMetrics(await (await fetch('/metrics', { cache: 'no-store' })).text());
    const ranks = {};
    const rank = (s) => { const k = s.labels.rank !== undefined ? (s.labels.instance || '') + ' #' + s.labels.rank : (s.labels.instance || s.labels.node || '?'); return ranks[k] = ranks[k] || { k }; };
    for (const s of m) {
      if (s.name === 'deepinfer_rank_active_sequences') rank(s).active = s.value;
      if (s.name === 'deepinfer_prefill_rank_queue') rank(s).queue = s.value;
      if (s.name === 'deepinfer_rank_kv_blocks_used') rank(s).used = s.value;
      if (s.name === 'deepinfer_rank_kv_blocks_total') rank(s).total = s.value;
      if (s.name === 'deepinfer_decode_router_requests') rank(s).dreq = s.value;
      if (s.name === 'deepinfer_decode_router_kv_tokens') rank(s).dkv = s.value;
      if (s.name === 'deepinfer_decode_router_kv_capacity_tokens') rank(s).dcap = s.value;
      if (s.name === 'deepinfer_prefill_queue_requests') rank(s).preq = s.value;
      if (s.name === 'deepinfer_prefill_queue_quota_seconds') rank(s).pquota = s.value;
    }
    rows('ranks', Object.values(ranks).sort((a, b) => a.k.localeCompare(b.k)).map((r) =>
      [r.k, r.dreq ?? '', r.dkv !== undefined ? r.dkv + ' / ' + (r.dcap ?? '?') : '',
       r.preq !== undefined ? r.preq + ' (' + (r.pquota ?? 0).toFixed(3) + ')' : '', r.active ?? '', r.queue ?? '',
       r.used !== undefined ? r.used + ' / ' + (r.total ?? '?') : '']));
    const one = (name) => m.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);
    rows('kv', [['KV store size', fmtBytes(one('deepinfer_kv_store_bytes'))],
      ['prefix-cache hit ratio (tokens)', (100 * one('deepinfer_prefix_cache_hit_ratio')).toFixed(1) + ' %'],
      ['prompt tokens / cached', one('deepinfer_prompt_tokens_total') + ' / ' + one('deepinfer_cached_tokens_total')],
      ['KV store blocks removed by GC', one('deepinfer_kv_gc_removed_total')]]);
    const auto = m.filter((s) => s.name.startsWith('deepinfer_autoscaler_'));
    if (auto.length) $('autoscaler').innerHTML = '<table>' + auto.map((s) => '<tr><td>' + esc(s.name + JSON.stringify(s.labels)) + '</td><td>' + s.value + '</td></tr>').join('') + '</table>';
    for (const [id, name] of [['ttft', 'deepinfer_time_to_first_token_seconds'], ['itl', 'deepinfer_inter_token_latency_seconds']]) {
      series[id].push(quantiles(m, name));
      if (series[id].length > 120) series[id].shift();
      draw(id, series[id]);
    }
    $('err').textContent = '';
  } catch (e) {
    $('err').textContent = 'cannot reach the server: ' + e;
  }
}
refresh();
setInterval(refresh, 1000);
</script></body></html>
)html";

} // namespace

std::string_view status_page_html() { return page; }

std::string status_json(const cluster_snapshot::state& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : s.view.nodes) {
    nlohmann::json roles = nlohmann::json::array();
    for (auto r : all_node_roles)
      if (n.info.roles.has(r))
        roles.push_back(to_string(r));
    nodes.push_back({{"name", n.info.name}, {"host", n.info.host}, {"port", n.info.port}, {"roles", roles},
                     {"state", to_string(n.state)}, {"since_ms", n.since_ms}, {"reason", n.reason}, {"joins", n.joins}});
  }
  nlohmann::json instances = nlohmann::json::array();
  for (const auto& i : s.view.instances)
    instances.push_back({{"instance", i.instance}, {"node", i.node}, {"role", to_string(i.role)},
                         {"state", to_string(i.state)}, {"healthy_ranks", i.healthy_ranks},
                         {"configured_ranks", i.configured_ranks}, {"generation", i.generation},
                         {"last_failure", i.last_failure}});
  return nlohmann::json{{"node", s.self.name}, {"controller_connected", s.controller_connected},
                        {"view_version", s.view.version}, {"nodes", nodes}, {"instances", instances}}
    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace deepinfer::actors
