#include "store/sqlite/oplog_frame.h"

#include <isa-l/crc.h>

#include <array>
#include <cstring>

namespace cairva::store::sqlite::oplog {
namespace {

// Writes `v` at `at` and returns the position after it.
template <class T>
char* put(char* at, T v) {
  std::memcpy(at, &v, sizeof(T));
  return at + sizeof(T);
}

template <class T>
T get_at(std::string_view in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

// The CRC covers the length too: a torn length cannot pass as a shorter intact frame.
// CRC-32 (IEEE, reflected: zlib's crc32() and Boost's crc_32_type, which wrote earlier logs,
// compute the same value). ISA-L folds 64 bytes a step with carry-less multiplies; zlib
// (1.2.13) takes a table lookup a byte, and the journal checksums every request's records on
// the event loop (sync=normal).
uint32_t checksum(const char* length, std::string_view payload) {
  const uint32_t crc =
      crc32_gzip_refl(0, reinterpret_cast<const unsigned char*>(length), sizeof(uint32_t));
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(payload.data()),
                         payload.size());
}

// Reads one frame's payload; false when it does not parse.
bool read_payload(std::string_view p, const RecordFn& each, Status& failed) {
  size_t at = 0;
  auto have = [&](size_t n) { return p.size() - at >= n; };
  while (at < p.size()) {
    if (!have(sizeof(int64_t) + 1)) return false;
    const auto seq = get_at<int64_t>(p, at);
    at += sizeof(int64_t);
    writes::Record r;
    r.kind = static_cast<writes::Record::Kind>(static_cast<uint8_t>(p[at++]));
    std::array<std::string_view, writes::Record::texts> texts;
    for (auto& t : texts) {
      if (!have(sizeof(uint32_t))) return false;
      const auto n = get_at<uint32_t>(p, at);
      at += sizeof(uint32_t);
      if (!have(n)) return false;
      t = p.substr(at, n);
      at += n;
    }
    r.set_texts(texts);
    for (auto& n : r.num_slots) {
      if (!have(sizeof(int64_t))) return false;
      n = get_at<int64_t>(p, at);
      at += sizeof(int64_t);
    }
    if (Status s = each(seq, std::move(r)); !s.ok()) {
      failed = s;
      return true;
    }
  }
  return true;
}

}  // namespace

void FrameBuilder::clear() { bytes_.assign(frame_header_bytes, '\0'); }

// One resize and plain stores instead of an append per field (21 per record): this runs on
// the event loop, twice per request.
void FrameBuilder::add(int64_t seq, const writes::Record& r) {
  constexpr size_t texts = writes::Record::texts;
  size_t size =
      sizeof(int64_t) + 1 + texts * sizeof(uint32_t) + r.num_slots.size() * sizeof(int64_t);
  for (size_t i = 0; i < texts; ++i) size += r.text_slot(i).size();
  const size_t start = bytes_.size();
  bytes_.resize(start + size);
  char* at = put(bytes_.data() + start, seq);
  *at++ = static_cast<char>(r.kind);
  for (size_t i = 0; i < texts; ++i) {
    const std::string_view t = r.text_slot(i);
    at = put(at, static_cast<uint32_t>(t.size()));
    if (!t.empty()) std::memcpy(at, t.data(), t.size());
    at += t.size();
  }
  for (const int64_t n : r.num_slots) at = put(at, n);
}

std::string_view FrameBuilder::seal() {
  const auto payload = static_cast<uint32_t>(bytes_.size() - frame_header_bytes);
  std::memcpy(bytes_.data(), &frame_magic, sizeof frame_magic);
  std::memcpy(bytes_.data() + 4, &payload, sizeof payload);
  const uint32_t sum =
      checksum(bytes_.data() + 4, std::string_view(bytes_).substr(frame_header_bytes));
  std::memcpy(bytes_.data() + 8, &sum, sizeof sum);
  return bytes_;
}

Result<size_t> read_frames(std::string_view frames, const RecordFn& each) {
  size_t at = 0;
  while (frames.size() - at >= frame_header_bytes) {
    if (get_at<uint32_t>(frames, at) != frame_magic) break;
    const auto payload = get_at<uint32_t>(frames, at + 4);
    if (frames.size() - at - frame_header_bytes < payload) break;
    const std::string_view body = frames.substr(at + frame_header_bytes, payload);
    if (checksum(frames.data() + at + 4, body) != get_at<uint32_t>(frames, at + 8)) break;
    Status failed;
    if (!read_payload(body, each, failed)) {
      return make_error(ErrorCode::internal_error,
                        "oplog: a frame at byte " + std::to_string(at) +
                            " has an intact checksum but unreadable records");
    }
    if (!failed.ok()) return failed.error();
    at += frame_header_bytes + payload;
  }
  return at;
}

}  // namespace cairva::store::sqlite::oplog
