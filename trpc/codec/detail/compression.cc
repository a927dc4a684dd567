#include "trpc/codec/detail/compression.h"

#include <fmt/format.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy.h>
#include <sys/uio.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace trpc::detail {

namespace {

// ---------------------------------------------------------------------------------------------
// Shared pieces.

// The most bytes handed to a library in one call: zlib counts in uInt, LZ4 in int.
constexpr size_t kMaxPiece = size_t{1} << 30;

std::string LimitError(uint32_t encoding, size_t max_bytes) {
  // Callers tell a bomb from corrupt input by the word "limit" (gRPC: RESOURCE_EXHAUSTED), so
  // only this message says it.
  return fmt::format("{}: the body inflates past the {}-byte limit", EncodingName(encoding),
                     max_bytes);
}

// Every other failure: "<encoding>: <why>".
std::string EncodingError(uint32_t encoding, std::string_view why) {
  return fmt::format("{}: {}", EncodingName(encoding), why);
}

uint32_t LoadLe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 | uint32_t{u[3]} << 24;
}
void StoreLe32(uint32_t v, char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

// The whole of `in` in one piece: in place when it is one span, else copied into `*scratch`.
// For the block formats, whose libraries take one contiguous input.
std::string_view Flatten(const ChainBuffer& in, std::string* scratch) {
  if (in.SpanCount() <= 1) return in.FirstSpan();
  scratch->resize(in.size());
  in.CopyTo(scratch->data(), in.size());
  return *scratch;
}

// The free space of the calling thread's current write block, for a decoder to write into; the
// bytes written are then committed to `buf` with buf->CommitWrite(n). At most one block (about
// 8 KiB): the "chunk" by which a streaming decoder overshoots a limit.
iovec WriteWindow(ChainBuffer* buf) {
  iovec iov;
  buf->PrepareWrite(&iov, 1, 1);
  return iov;
}

// ---------------------------------------------------------------------------------------------
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), for snappy's framing format. Slicing by
// 8 from tables built at compile time; SSE4.2's crc32 instruction when the CPU has it.

constexpr uint32_t kCastagnoli = 0x82F63B78;

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables MakeCrcTables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) != 0 ? kCastagnoli : 0);
    t[0][i] = c;
  }
  // t[k][i]: the CRC of byte i followed by k zero bytes.
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrcTables = MakeCrcTables();

// Extends the CRC register `crc` (pre- and post-inversion left to the caller) over [p, p + n).
uint32_t TableCrc(uint32_t crc, const unsigned char* p, size_t n) {
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t lo =
        crc ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    crc = kCrcTables[7][lo & 0xff] ^ kCrcTables[6][(lo >> 8) & 0xff] ^
          kCrcTables[5][(lo >> 16) & 0xff] ^ kCrcTables[4][lo >> 24] ^ kCrcTables[3][p[4]] ^
          kCrcTables[2][p[5]] ^ kCrcTables[1][p[6]] ^ kCrcTables[0][p[7]];
  }
  for (; n > 0; ++p, --n) crc = (crc >> 8) ^ kCrcTables[0][(crc ^ *p) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42Crc(uint32_t crc, const unsigned char* p,
                                                    size_t n) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
#endif

using CrcFn = uint32_t (*)(uint32_t, const unsigned char*, size_t);

CrcFn PickCrc() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // we may run before the constructor that would otherwise call it
  if (__builtin_cpu_supports("sse4.2")) return Sse42Crc;
#endif
  return TableCrc;
}

uint32_t RunCrc(CrcFn fn, uint32_t crc, std::string_view data) {
  return ~fn(~crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

// framing_format.txt section 3: the CRC is stored masked, rotated right by 15 bits plus a
// constant, because checksumming data that contains its own CRC is weak.
uint32_t MaskedCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8; }

// ---------------------------------------------------------------------------------------------
// gzip and zlib (zlib library). windowBits 15 writes/reads the zlib wrapper, 15 + 16 gzip's.

int WindowBits(bool gzip) { return gzip ? 15 + 16 : 15; }
uint32_t ZlibEncoding(bool gzip) { return gzip ? kEncodingGzip : kEncodingZlib; }

bool Deflate(bool gzip, const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(gzip), 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    *err = EncodingError(ZlibEncoding(gzip), "cannot start deflating");
    return false;
  }
  ChainBuffer packed;
  // Runs deflate() over the current input until it needs more (flush == Z_NO_FLUSH) or has
  // written the whole stream (Z_FINISH); each call writes into the current write block.
  auto run = [&](int flush) {
    for (;;) {
      iovec iov = WriteWindow(&packed);
      z.next_out = static_cast<Bytef*>(iov.iov_base);
      z.avail_out = static_cast<uInt>(std::min(iov.iov_len, kMaxPiece));
      int rc = deflate(&z, flush);
      packed.CommitWrite(std::min(iov.iov_len, kMaxPiece) - z.avail_out);
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return true;
        if (rc != Z_OK) return false;
      } else {
        if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
        if (z.avail_in == 0 && z.avail_out != 0) return true;
      }
    }
  };
  bool ok = true;
  for (size_t i = 0; i < in.SpanCount() && ok; ++i) {
    std::string_view span = in.Span(i);
    while (!span.empty() && ok) {
      size_t n = std::min(span.size(), kMaxPiece);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(span.data()));
      z.avail_in = static_cast<uInt>(n);
      ok = run(Z_NO_FLUSH);
      span.remove_prefix(n);
    }
  }
  if (ok) ok = run(Z_FINISH);
  deflateEnd(&z);
  if (!ok) {
    *err = EncodingError(ZlibEncoding(gzip), "deflate failed");
    return false;
  }
  out->Append(std::move(packed));
  return true;
}

// Go's readers are the reference: compress/gzip reads concatenated members as one stream (and
// fails on bytes after a member that do not begin another); compress/zlib stops after the
// stream's checksum and ignores what follows.
bool Inflate(bool gzip, const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
             std::string* err) {
  const uint32_t encoding = ZlibEncoding(gzip);
  z_stream z{};
  if (inflateInit2(&z, WindowBits(gzip)) != Z_OK) {
    *err = EncodingError(encoding, "cannot start inflating");
    return false;
  }
  ChainBuffer plain;
  size_t span_index = 0;
  std::string_view span;  // the rest of in.Span(span_index) not yet given to zlib
  auto input_left = [&] { return z.avail_in > 0 || !span.empty() || span_index < in.SpanCount(); };
  bool ok = false;
  for (;;) {
    if (z.avail_in == 0) {
      while (span.empty() && span_index < in.SpanCount()) span = in.Span(span_index++);
      size_t n = std::min(span.size(), kMaxPiece);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(span.data()));
      z.avail_in = static_cast<uInt>(n);
      span.remove_prefix(n);
    }
    iovec iov = WriteWindow(&plain);
    z.next_out = static_cast<Bytef*>(iov.iov_base);
    z.avail_out = static_cast<uInt>(std::min(iov.iov_len, kMaxPiece));
    int rc = inflate(&z, Z_NO_FLUSH);
    plain.CommitWrite(std::min(iov.iov_len, kMaxPiece) - z.avail_out);
    if (plain.size() > max_bytes) {
      *err = LimitError(encoding, max_bytes);
      break;
    }
    if (rc == Z_STREAM_END) {
      if (!gzip || !input_left()) {
        ok = true;
        break;
      }
      inflateReset(&z);  // the next gzip member
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && input_left()) continue;  // no progress until the next span
    if (rc == Z_BUF_ERROR) {
      *err = EncodingError(encoding, "the stream is truncated");
    } else if (rc == Z_NEED_DICT) {
      *err = EncodingError(encoding, "the stream needs a preset dictionary");
    } else if (rc == Z_MEM_ERROR) {
      *err = EncodingError(encoding, "out of memory");
    } else {
      *err = EncodingError(encoding, z.msg != nullptr ? fmt::format("corrupt stream ({})", z.msg)
                                                      : std::string("corrupt stream"));
    }
    break;
  }
  inflateEnd(&z);
  if (ok) out->Append(std::move(plain));
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Snappy's framing format (framing_format.txt), as golang/snappy's Writer and Reader speak it:
//
//   stream   := identifier chunk*
//   chunk    := type:1 length:3 (little-endian, bytes after these 4) body:length
//   0xff identifier    body "sNaPpY"; may repeat
//   0x00 compressed    masked CRC-32C of the uncompressed data (4, LE) + one snappy block
//   0x01 uncompressed  masked CRC-32C (4, LE) + the data
//   0xfe padding, 0x80..0xfd reserved skippable: skipped; 0x02..0x7f reserved: refused
//
// Uncompressed data per chunk is at most 64 KiB. golang/snappy refuses any chunk whose length
// exceeds its buffer (the compressed bound of 64 KiB plus the checksum), skippable ones too.

constexpr size_t kSnappyChunkHeader = 4;
constexpr size_t kSnappyChecksum = 4;
constexpr size_t kSnappyMaxChunkData = 65536;
constexpr size_t kSnappyMaxChunkLength = 76490 + kSnappyChecksum;  // golang/snappy's buffer
constexpr std::string_view kSnappyIdentifier{"\xff\x06\x00\x00sNaPpY", 10};
constexpr unsigned char kChunkCompressed = 0x00;
constexpr unsigned char kChunkUncompressed = 0x01;
constexpr unsigned char kChunkIdentifier = 0xff;

void AppendChunkHeader(unsigned char type, size_t length, uint32_t masked_crc, ChainBuffer* out) {
  char h[kSnappyChunkHeader + kSnappyChecksum];
  h[0] = static_cast<char>(type);
  h[1] = static_cast<char>(length);
  h[2] = static_cast<char>(length >> 8);
  h[3] = static_cast<char>(length >> 16);
  StoreLe32(masked_crc, h + 4);
  out->Append(h, sizeof(h));
}

bool SnappyStreamCompress(const ChainBuffer& in, ChainBuffer* out) {
  ChainBuffer packed;
  packed.Append(kSnappyIdentifier);
  ChainBuffer rest = in.Clone();
  std::string flat(kSnappyMaxChunkData, '\0');
  std::string compressed(snappy::MaxCompressedLength(kSnappyMaxChunkData), '\0');
  while (!rest.empty()) {
    ChainBuffer piece = rest.Cut(std::min(rest.size(), kSnappyMaxChunkData));
    const size_t n = piece.size();
    const char* data = piece.Peek(n, flat.data());
    const uint32_t crc = Crc32c(0, {data, n});
    size_t clen = 0;
    snappy::RawCompress(data, n, compressed.data(), &clen);
    // golang/snappy keeps the compressed form only when it saves at least 12.5%.
    if (clen < n - n / 8) {
      AppendChunkHeader(kChunkCompressed, kSnappyChecksum + clen, MaskedCrc(crc), &packed);
      packed.Append(compressed.data(), clen);
    } else {
      AppendChunkHeader(kChunkUncompressed, kSnappyChecksum + n, MaskedCrc(crc), &packed);
      packed.Append(std::move(piece));  // the input's bytes, shared
    }
  }
  out->Append(std::move(packed));
  return true;
}

bool SnappyStreamDecompress(uint32_t encoding, const ChainBuffer& in, size_t max_bytes,
                            ChainBuffer* out, std::string* err) {
  ChainBuffer plain;
  ChainBuffer rest = in.Clone();
  std::string scratch;
  std::string decoded(kSnappyMaxChunkData, '\0');
  bool seen_identifier = false;
  while (!rest.empty()) {
    const size_t at = in.size() - rest.size();
    if (rest.size() < kSnappyChunkHeader) {
      *err = EncodingError(encoding, fmt::format("truncated chunk header at byte {}", at));
      return false;
    }
    char h[kSnappyChunkHeader];
    rest.CopyTo(h, sizeof(h));
    const auto type = static_cast<unsigned char>(h[0]);
    const size_t length = LoadLe32(h) >> 8;
    if (!seen_identifier && type != kChunkIdentifier) {
      *err = EncodingError(encoding, "the stream does not begin with the stream identifier");
      return false;
    }
    if (length > kSnappyMaxChunkLength) {
      *err = EncodingError(encoding, fmt::format("chunk of {} bytes at byte {}: more than {}",
                                                 length, at, kSnappyMaxChunkLength));
      return false;
    }
    if (rest.size() - kSnappyChunkHeader < length) {
      *err = EncodingError(encoding, fmt::format("truncated chunk at byte {}", at));
      return false;
    }
    rest.Skip(kSnappyChunkHeader);
    ChainBuffer body = rest.Cut(length);
    if (type == kChunkIdentifier) {
      if (length != kSnappyIdentifier.size() - kSnappyChunkHeader ||
          body.ToString() != kSnappyIdentifier.substr(kSnappyChunkHeader)) {
        *err = EncodingError(encoding, fmt::format("bad stream identifier at byte {}", at));
        return false;
      }
      seen_identifier = true;
      continue;
    }
    if (type >= 0x80) continue;  // padding (0xfe) or reserved skippable (0x80..0xfd)
    if (type != kChunkCompressed && type != kChunkUncompressed) {
      *err = EncodingError(
          encoding, fmt::format("reserved unskippable chunk type {:#04x} at byte {}", type, at));
      return false;
    }
    if (length < kSnappyChecksum) {
      *err = EncodingError(encoding,
                           fmt::format("chunk at byte {} is too short for its checksum", at));
      return false;
    }
    char crc_bytes[kSnappyChecksum];
    body.CopyTo(crc_bytes, kSnappyChecksum);
    body.Skip(kSnappyChecksum);
    const uint32_t expected_crc = LoadLe32(crc_bytes);
    uint32_t crc = 0;
    if (type == kChunkCompressed) {
      scratch.resize(body.size());
      const char* data = body.Peek(body.size(), scratch.data());
      size_t n = 0;
      if (!snappy::GetUncompressedLength(data, body.size(), &n)) {
        *err = EncodingError(encoding, fmt::format("bad block length in chunk at byte {}", at));
        return false;
      }
      if (n > kSnappyMaxChunkData) {
        *err = EncodingError(encoding, fmt::format("chunk at byte {} holds {} bytes, more than {}",
                                                   at, n, kSnappyMaxChunkData));
        return false;
      }
      if (plain.size() + n > max_bytes) {
        *err = LimitError(encoding, max_bytes);
        return false;
      }
      if (!snappy::RawUncompress(data, body.size(), decoded.data())) {
        *err = EncodingError(encoding, fmt::format("corrupt block in chunk at byte {}", at));
        return false;
      }
      crc = Crc32c(0, {decoded.data(), n});
      if (MaskedCrc(crc) != expected_crc) {
        *err = EncodingError(encoding, fmt::format("checksum mismatch in chunk at byte {}", at));
        return false;
      }
      plain.Append(decoded.data(), n);
    } else {
      const size_t n = body.size();
      if (n > kSnappyMaxChunkData) {
        *err = EncodingError(encoding, fmt::format("chunk at byte {} holds {} bytes, more than {}",
                                                   at, n, kSnappyMaxChunkData));
        return false;
      }
      if (plain.size() + n > max_bytes) {
        *err = LimitError(encoding, max_bytes);
        return false;
      }
      for (size_t i = 0; i < body.SpanCount(); ++i) crc = Crc32c(crc, body.Span(i));
      if (MaskedCrc(crc) != expected_crc) {
        *err = EncodingError(encoding, fmt::format("checksum mismatch in chunk at byte {}", at));
        return false;
      }
      plain.Append(std::move(body));  // the input's bytes, shared
    }
  }
  out->Append(std::move(plain));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Snappy block: a varint of the uncompressed length, then the block. The length is checked
// against the limit before anything is allocated.

bool SnappyBlockCompress(const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  if (in.size() > UINT32_MAX) {  // the length prefix is a 32-bit varint
    *err = EncodingError(kEncodingSnappyBlock, "input larger than 4 GiB");
    return false;
  }
  std::string scratch;
  std::string_view flat = Flatten(in, &scratch);
  std::string compressed(snappy::MaxCompressedLength(flat.size()), '\0');
  size_t n = 0;
  snappy::RawCompress(flat.data(), flat.size(), compressed.data(), &n);
  out->Append(compressed.data(), n);
  return true;
}

bool SnappyBlockDecompress(const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                           std::string* err) {
  std::string scratch;
  std::string_view flat = Flatten(in, &scratch);
  size_t n = 0;
  if (!snappy::GetUncompressedLength(flat.data(), flat.size(), &n)) {
    *err = EncodingError(kEncodingSnappyBlock, "bad length prefix");
    return false;
  }
  if (n > max_bytes) {
    *err = LimitError(kEncodingSnappyBlock, max_bytes);
    return false;
  }
  auto plain = std::make_unique_for_overwrite<char[]>(std::max<size_t>(n, 1));
  if (!snappy::RawUncompress(flat.data(), flat.size(), plain.get())) {
    *err = EncodingError(kEncodingSnappyBlock, "corrupt block");
    return false;
  }
  out->Append(plain.get(), n);
  return true;
}

// ---------------------------------------------------------------------------------------------
// LZ4 frame (lz4frame.h). One frame is written: LZ4F's default preferences (64 KiB blocks,
// linked) plus a content checksum, as pierrec/lz4's Writer sets one. Read: one frame, with
// skippable frames (magic 0x184D2A50..5F) allowed before and after it; pierrec/lz4's Reader reads
// one frame and ignores whatever follows, which we refuse instead of dropping silently.

constexpr uint32_t kLz4FrameMagic = 0x184D2204;
constexpr uint32_t kLz4SkippableMagic = 0x184D2A50;  // low 4 bits free
constexpr size_t kLz4FeedPiece = 64 * 1024;

struct Lz4fCctxDeleter {
  void operator()(LZ4F_cctx* c) const { LZ4F_freeCompressionContext(c); }
};
struct Lz4fDctxDeleter {
  void operator()(LZ4F_dctx* d) const { LZ4F_freeDecompressionContext(d); }
};

bool Lz4FrameCompress(const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  LZ4F_cctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createCompressionContext(&raw, LZ4F_VERSION))) {
    *err = EncodingError(kEncodingLz4Frame, "cannot create a compression context");
    return false;
  }
  std::unique_ptr<LZ4F_cctx, Lz4fCctxDeleter> cctx(raw);
  LZ4F_preferences_t prefs = LZ4F_INIT_PREFERENCES;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  // LZ4F_compressBound covers one update of kLz4FeedPiece bytes plus what LZ4F holds buffered,
  // and the end of the frame.
  std::string dst(std::max<size_t>(LZ4F_compressBound(kLz4FeedPiece, &prefs), LZ4F_HEADER_SIZE_MAX),
                  '\0');
  ChainBuffer packed;
  auto emit = [&](size_t rc) {
    if (LZ4F_isError(rc)) {
      *err = EncodingError(kEncodingLz4Frame, LZ4F_getErrorName(rc));
      return false;
    }
    packed.Append(dst.data(), rc);
    return true;
  };
  if (!emit(LZ4F_compressBegin(cctx.get(), dst.data(), dst.size(), &prefs))) return false;
  for (size_t i = 0; i < in.SpanCount(); ++i) {
    std::string_view span = in.Span(i);
    while (!span.empty()) {
      size_t n = std::min(span.size(), kLz4FeedPiece);
      if (!emit(LZ4F_compressUpdate(cctx.get(), dst.data(), dst.size(), span.data(), n, nullptr))) {
        return false;
      }
      span.remove_prefix(n);
    }
  }
  if (!emit(LZ4F_compressEnd(cctx.get(), dst.data(), dst.size(), nullptr))) return false;
  out->Append(std::move(packed));
  return true;
}

// Decodes the frame at the front of `rest` (which begins with its magic) into `plain`, and drops
// its bytes from `rest`.
bool Lz4DecodeFrame(LZ4F_dctx* dctx, ChainBuffer* rest, size_t max_bytes, ChainBuffer* plain,
                    std::string* err) {
  size_t consumed = 0;
  for (size_t i = 0; i < rest->SpanCount(); ++i) {
    std::string_view span = rest->Span(i);
    for (;;) {
      iovec iov = WriteWindow(plain);
      size_t dst_size = iov.iov_len;
      size_t src_size = span.size();
      size_t hint = LZ4F_decompress(dctx, iov.iov_base, &dst_size, span.data(), &src_size, nullptr);
      if (LZ4F_isError(hint)) {
        *err = EncodingError(kEncodingLz4Frame, fmt::format("{} (at byte {} of the frame)",
                                                            LZ4F_getErrorName(hint), consumed));
        return false;
      }
      plain->CommitWrite(dst_size);
      span.remove_prefix(src_size);
      consumed += src_size;
      if (plain->size() > max_bytes) {
        *err = LimitError(kEncodingLz4Frame, max_bytes);
        return false;
      }
      if (hint == 0) {  // the frame is whole and all of it written out
        rest->Skip(consumed);
        return true;
      }
      // A full window may mean LZ4F holds more decoded bytes: call again even without input.
      if (dst_size == iov.iov_len) continue;
      if (span.empty()) break;
      if (src_size == 0 && dst_size == 0) {  // cannot happen with a working LZ4F; never spin
        *err = EncodingError(kEncodingLz4Frame, "the decoder made no progress");
        return false;
      }
    }
  }
  *err = EncodingError(kEncodingLz4Frame, "the frame is truncated");
  return false;
}

bool Lz4FrameDecompress(const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                        std::string* err) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    *err = EncodingError(kEncodingLz4Frame, "cannot create a decompression context");
    return false;
  }
  std::unique_ptr<LZ4F_dctx, Lz4fDctxDeleter> dctx(raw);
  ChainBuffer plain;
  ChainBuffer rest = in.Clone();
  bool seen_frame = false;
  while (!rest.empty()) {
    const size_t at = in.size() - rest.size();
    char h[8] = {};
    if (rest.size() < 4) {
      *err = EncodingError(kEncodingLz4Frame,
                           fmt::format("{} stray bytes at byte {}", rest.size(), at));
      return false;
    }
    rest.CopyTo(h, 8);
    const uint32_t magic = LoadLe32(h);
    if ((magic & 0xfffffff0) == kLz4SkippableMagic) {
      if (rest.size() < 8 || rest.size() - 8 < LoadLe32(h + 4)) {
        *err = EncodingError(kEncodingLz4Frame,
                             fmt::format("truncated skippable frame at byte {}", at));
        return false;
      }
      rest.Skip(8 + size_t{LoadLe32(h + 4)});
      continue;
    }
    if (magic != kLz4FrameMagic) {
      *err =
          EncodingError(kEncodingLz4Frame, fmt::format("bad magic {:#010x} at byte {}", magic, at));
      return false;
    }
    if (seen_frame) {
      *err = EncodingError(
          kEncodingLz4Frame,
          fmt::format("a second frame at byte {} (tRPC-Go reads only the first)", at));
      return false;
    }
    if (!Lz4DecodeFrame(dctx.get(), &rest, max_bytes, &plain, err)) return false;
    seen_frame = true;
  }
  out->Append(std::move(plain));
  return true;
}

// ---------------------------------------------------------------------------------------------
// LZ4 block: the block alone, no length. A block inflates at most 255 times (a match of n * 255
// bytes costs n input bytes), so the output buffer doubles from a guess up to the smaller of
// that bound and the limit: a bomb costs at most about max_bytes of memory.

constexpr size_t kLz4MaxRatio = 255;

bool Lz4BlockCompress(const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  if (in.size() > LZ4_MAX_INPUT_SIZE) {
    *err = EncodingError(kEncodingLz4Block,
                         fmt::format("input larger than {} bytes", LZ4_MAX_INPUT_SIZE));
    return false;
  }
  std::string scratch;
  std::string_view flat = Flatten(in, &scratch);
  const int n = static_cast<int>(flat.size());
  std::string compressed(static_cast<size_t>(LZ4_compressBound(n)), '\0');
  int written =
      LZ4_compress_default(flat.data(), compressed.data(), n, static_cast<int>(compressed.size()));
  if (written <= 0) {
    *err = EncodingError(kEncodingLz4Block, "compression failed");
    return false;
  }
  out->Append(compressed.data(), static_cast<size_t>(written));
  return true;
}

bool Lz4BlockDecompress(const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                        std::string* err) {
  if (in.size() > static_cast<size_t>(INT_MAX)) {
    *err = EncodingError(kEncodingLz4Block, "block larger than 2 GiB");
    return false;
  }
  std::string scratch;
  std::string_view flat = Flatten(in, &scratch);
  const int src_size = static_cast<int>(flat.size());
  // One byte past the limit in the last round: a block that fills it is known to exceed it.
  const size_t past_limit = max_bytes < SIZE_MAX ? max_bytes + 1 : max_bytes;
  const size_t cap_limit =
      std::min({flat.size() * kLz4MaxRatio, past_limit, static_cast<size_t>(INT_MAX)});
  size_t cap = std::min(cap_limit, std::max<size_t>(flat.size() * 4, 64 * 1024));
  std::unique_ptr<char[]> buf;
  for (;;) {
    buf.reset();  // the last round's buffer goes before the next is taken
    buf = std::make_unique_for_overwrite<char[]>(cap);
    const int n = LZ4_decompress_safe(flat.data(), buf.get(), src_size, static_cast<int>(cap));
    if (n >= 0) {
      if (static_cast<size_t>(n) > max_bytes) {
        *err = LimitError(kEncodingLz4Block, max_bytes);
        return false;
      }
      out->Append(buf.get(), static_cast<size_t>(n));
      return true;
    }
    if (cap == cap_limit) break;
    cap = std::min(cap * 2, cap_limit);
  }
  // Too small a buffer and a malformed block fail alike: decode up to the end of the buffer to
  // tell which.
  const int partial = LZ4_decompress_safe_partial(flat.data(), buf.get(), src_size,
                                                  static_cast<int>(cap), static_cast<int>(cap));
  if (partial >= 0 && static_cast<size_t>(partial) > max_bytes) {
    *err = LimitError(kEncodingLz4Block, max_bytes);
  } else {
    *err = EncodingError(kEncodingLz4Block, "corrupt block");
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

uint32_t Crc32c(uint32_t crc, std::string_view data) {
  static const CrcFn fn = PickCrc();
  return RunCrc(fn, crc, data);
}

uint32_t Crc32cPortable(uint32_t crc, std::string_view data) { return RunCrc(TableCrc, crc, data); }

bool IsSupportedEncoding(uint32_t encoding) { return encoding <= kEncodingLz4Block; }

std::string_view EncodingName(uint32_t encoding) {
  static constexpr std::string_view kNames[] = {
      "none", "gzip", "snappy", "zlib", "snappy-stream", "snappy-block", "lz4-frame", "lz4-block"};
  return IsSupportedEncoding(encoding) ? kNames[encoding] : "unknown";
}

bool ZlibCompress(bool gzip, const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  return Deflate(gzip, in, out, err);
}

bool ZlibDecompress(bool gzip, const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                    std::string* err) {
  return Inflate(gzip, in, max_bytes, out, err);
}

bool CompressBody(uint32_t encoding, const ChainBuffer& in, ChainBuffer* out, std::string* err) {
  if (!IsSupportedEncoding(encoding)) {
    *err = fmt::format("unknown content_encoding {}", encoding);
    return false;
  }
  if (in.empty()) return true;
  switch (encoding) {
    case kEncodingNone:
      out->AppendShared(in);
      return true;
    case kEncodingGzip:
    case kEncodingZlib:
      return Deflate(encoding == kEncodingGzip, in, out, err);
    case kEncodingSnappy:
    case kEncodingSnappyStream:
      return SnappyStreamCompress(in, out);
    case kEncodingSnappyBlock:
      return SnappyBlockCompress(in, out, err);
    case kEncodingLz4Frame:
      return Lz4FrameCompress(in, out, err);
    default:
      return Lz4BlockCompress(in, out, err);
  }
}

bool DecompressBody(uint32_t encoding, const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                    std::string* err) {
  if (!IsSupportedEncoding(encoding)) {
    *err = fmt::format("unknown content_encoding {}", encoding);
    return false;
  }
  if (in.empty()) return true;
  switch (encoding) {
    case kEncodingNone:
      if (in.size() > max_bytes) {
        *err = LimitError(encoding, max_bytes);
        return false;
      }
      out->AppendShared(in);
      return true;
    case kEncodingGzip:
    case kEncodingZlib:
      return Inflate(encoding == kEncodingGzip, in, max_bytes, out, err);
    case kEncodingSnappy:
    case kEncodingSnappyStream:
      return SnappyStreamDecompress(encoding, in, max_bytes, out, err);
    case kEncodingSnappyBlock:
      return SnappyBlockDecompress(in, max_bytes, out, err);
    case kEncodingLz4Frame:
      return Lz4FrameDecompress(in, max_bytes, out, err);
    default:
      return Lz4BlockDecompress(in, max_bytes, out, err);
  }
}

}  // namespace trpc::detail
