#include "launcher/cpu_list.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <sched.h>

namespace deepinfer::launcher {

namespace {

constexpr int max_cpu = CPU_SETSIZE - 1; // what a cpu_set_t holds (1023)

std::optional<int> cpu_number(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0 || v > max_cpu)
    return std::nullopt;
  return v;
}

} // namespace

expected<std::vector<int>, std::string> parse_cpu_list(std::string_view text) {
  std::vector<int> out;
  const std::string whole{text};
  auto bad = [&](std::string_view part, const char* why) {
    return "'" + whole + "' is not a CPU list: '" + std::string{part} + "' " + why +
           " (expected CPU numbers and ranges, e.g. \"0\", \"0-3\", \"0,2,4-5\")";
  };
  if (text.empty())
    return std::string{"an empty CPU list (give CPU numbers and ranges, e.g. \"0-3\", or leave the key out)"};
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty())
      return bad(part, "ends the list with a comma");
    const auto dash = part.find('-');
    const auto first = cpu_number(part.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : cpu_number(part.substr(dash + 1));
    if (!first || !last)
      return bad(part, "is not a CPU number (0 to 1023) or a range of two");
    if (*last < *first)
      return bad(part, "is a range that ends before it starts");
    for (int c = *first; c <= *last; ++c)
      out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    if (!out.empty())
      out += ',';
    out += std::to_string(cpus[i]);
    if (j > i)
      out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

expected<bool, std::string> keep_process_on(const std::vector<int>& cpus) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return std::string{"cannot read which CPUs this process may use"};
  std::vector<int> have;
  for (int c = 0; c <= max_cpu; ++c)
    if (CPU_ISSET(c, &allowed))
      have.push_back(c);
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : cpus) {
    if (!std::binary_search(have.begin(), have.end(), c))
      return "CPU " + std::to_string(c) + " is not one this process may use here (it may use " +
             cpu_list_text(have) + "): give CPUs of that list";
    CPU_SET(c, &want);
  }
  // Every thread the process has now (each thread has its own mask), and through the calling
  // thread's mask every thread started later.
  if (sched_setaffinity(0, sizeof want, &want) != 0)
    return "the kernel refused to keep this process on CPUs " + cpu_list_text(cpus);
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const auto name = task.path().filename().string();
    pid_t tid = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), tid).ec == std::errc{})
      sched_setaffinity(tid, sizeof want, &want); // a thread that has just ended: nothing to keep
  }
  return true;
}

} // namespace deepinfer::launcher
