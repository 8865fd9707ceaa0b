#include "engine/model/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace deepinfer::engine {

std::optional<std::size_t> dtype_size(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16")
    return 2;
  if (dtype == "F64" || dtype == "I64")
    return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return std::nullopt;
}

safetensors_file::open_result safetensors_file::open(const std::string& path) {
  open_result out;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    out.error = "cannot open " + path + ": " + std::strerror(errno);
    return out;
  }
  struct stat st {};
  ::fstat(fd, &st);
  auto size = static_cast<std::size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    out.error = path + ": truncated file (" + std::to_string(size) + " bytes, no header)";
    return out;
  }
  // MAP_POPULATE maps every page now: a rank's first long prompt would otherwise take a page
  // fault per 4 KB of weights it touches (~16K for the tiny model's lm_head alone).
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    out.error = "cannot mmap " + path + ": " + std::strerror(errno);
    return out;
  }
  std::unique_ptr<safetensors_file> f{new safetensors_file};
  f->map_ = map;
  f->map_size_ = size;
  auto* bytes = static_cast<const std::byte*>(map);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8); // safetensors is little-endian, as is every target here
  if (header_len > size - 8) {
    out.error = path + ": truncated file (header of " + std::to_string(header_len) +
                " bytes does not fit in " + std::to_string(size) + ")";
    return out;
  }
  f->data_ = bytes + 8 + header_len;
  f->data_size_ = size - 8 - header_len;
  try {
    auto j = nlohmann::json::parse(reinterpret_cast<const char*>(bytes + 8),
                                   reinterpret_cast<const char*>(bytes + 8 + header_len));
    for (auto& [name, v] : j.items()) {
      if (name == "__metadata__")
        continue;
      tensor_entry e;
      v.at("dtype").get_to(e.dtype);
      v.at("shape").get_to(e.shape);
      auto offs = v.at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1]) {
        out.error = path + ": tensor '" + name + "' has malformed data_offsets";
        return out;
      }
      e.begin = offs[0];
      e.end = offs[1];
      if (e.end > f->data_size_) {
        out.error = path + ": tensor '" + name + "' data [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + ") lies past the end of the data section (" +
                    std::to_string(f->data_size_) + " bytes): truncated file";
        return out;
      }
      f->entries_.emplace(name, std::move(e));
    }
  } catch (const std::exception& e) {
    out.error = path + ": bad safetensors header: " + e.what();
    return out;
  }
  out.file = std::move(f);
  return out;
}

safetensors_file::~safetensors_file() {
  if (map_ != nullptr)
    ::munmap(map_, map_size_);
}

const tensor_entry* safetensors_file::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

void safetensors_writer::add(const std::string& name, const std::string& dtype,
                             std::vector<int64_t> shape) {
  tensors_.push_back({name, dtype, std::move(shape)});
}

bool safetensors_writer::begin(const std::string& path) {
  nlohmann::ordered_json j;
  j["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (auto& t : tensors_) {
    uint64_t n = *dtype_size(t.dtype);
    for (auto d : t.shape)
      n *= static_cast<uint64_t>(d);
    j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string header = j.dump();
  // Pad with spaces (allowed by the format) so f32 data is aligned in the mapping.
  while ((header.size() + 8) % 8 != 0)
    header.push_back(' ');
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_)
    return false;
  uint64_t len = header.size();
  out_.write(reinterpret_cast<const char*>(&len), 8);
  out_.write(header.data(), static_cast<std::streamsize>(header.size()));
  return static_cast<bool>(out_);
}

void safetensors_writer::write(const void* bytes, std::size_t n) {
  out_.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
}

bool safetensors_writer::finish() {
  out_.flush();
  bool ok = static_cast<bool>(out_);
  out_.close();
  return ok;
}

} // namespace deepinfer::engine
