#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace deepinfer::engine {

/// One tensor's entry in a safetensors header.
struct tensor_entry {
  std::string dtype;  ///< As written: "F32", "BF16", ... (the loader decides what it accepts).
  std::vector<int64_t> shape;
  uint64_t begin = 0; ///< Byte offsets relative to the data section.
  uint64_t end = 0;
};

/// A read-only, memory-mapped safetensors file. The header is parsed and every entry's offsets
/// are checked against the file size on open, so a truncated file fails naming a tensor.
class safetensors_file {
public:
  /// Result of `open`: the file, or an error message.
  struct open_result {
    std::unique_ptr<safetensors_file> file;
    std::string error;
  };

  /// Maps `path` and parses its header. Never throws.
  static open_result open(const std::string& path);

  ~safetensors_file();
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;

  /// The entry named `name`, or nullptr.
  const tensor_entry* find(const std::string& name) const;
  /// Pointer to the first byte of `e`'s data.
  const std::byte* data(const tensor_entry& e) const { return data_ + e.begin; }
  /// The whole data section (everything after the header).
  const std::byte* data_section() const { return data_; }
  std::size_t data_size() const { return data_size_; }
  const std::map<std::string, tensor_entry>& entries() const { return entries_; }

private:
  safetensors_file() = default;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  const std::byte* data_ = nullptr;
  std::size_t data_size_ = 0;
  std::map<std::string, tensor_entry> entries_;
};

/// Writes a safetensors file tensor by tensor: declare every tensor first (`add`), then `begin`
/// writes the header and `write` streams each tensor's bytes in declaration order.
class safetensors_writer {
public:
  /// Declares a tensor; `dtype` is "F32" or "BF16".
  void add(const std::string& name, const std::string& dtype, std::vector<int64_t> shape);
  /// Opens `path` and writes the header (padded so the data section is 8-byte aligned). False
  /// when the file cannot be created.
  bool begin(const std::string& path);
  /// Appends raw bytes of the next tensor(s).
  void write(const void* bytes, std::size_t n);
  /// Flushes and closes; false on an I/O error.
  bool finish();

private:
  struct pending {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
  };
  std::vector<pending> tensors_;
  std::ofstream out_;
};

/// Bytes per element of a safetensors dtype name, or nullopt when unknown.
std::optional<std::size_t> dtype_size(const std::string& dtype);

} // namespace deepinfer::engine
