// The operation log's bytes: a segment file is `segment_magic`, then frames; a frame is
// one commit (every record a journal batch appended), all or nothing:
//
//   u32 frame_magic | u32 payload bytes | u32 CRC-32 of those 4 length bytes and the payload |
//   payload payload: records, each  i64 seq | u8 kind | 7 × (u32 bytes | text) | 5 × i64
//
// Little-endian, fixed layout. A write the process or the machine did not finish leaves a
// frame whose length or CRC does not hold: reading stops there (that commit was never
// acknowledged). Pure: no I/O.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "store/sqlite/record.h"

namespace cairva::store::sqlite::oplog {

static_assert(std::endian::native == std::endian::little, "the oplog's layout is the host's");

inline constexpr std::string_view segment_magic = "CVOPLOG1";
inline constexpr uint32_t frame_magic = 0x31465643;  // "CVF1"
inline constexpr size_t frame_header_bytes = 12;

// Collects one commit's records, then hands out the frame's bytes.
class FrameBuilder {
 public:
  FrameBuilder() { clear(); }
  void add(int64_t seq, const writes::Record& r);
  bool empty() const { return bytes_.size() == frame_header_bytes; }
  // The whole frame (valid until the next add or clear).
  std::string_view seal();
  void clear();

 private:
  std::string bytes_;  // header placeholder, then the payload
};

// Calls `each` for every record of every intact frame of `frames` (a segment's bytes after
// its magic), in order, and returns how many bytes those frames span: the rest is a torn
// tail. An error from `each` stops the reading and is returned; so is a frame whose CRC
// holds but whose records do not parse (written by something else than this format).
using RecordFn = std::function<Status(int64_t seq, writes::Record&& r)>;
Result<size_t> read_frames(std::string_view frames, const RecordFn& each);

}  // namespace cairva::store::sqlite::oplog
