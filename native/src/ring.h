// A single-producer single-consumer byte ring in a POSIX shared-memory segment (no N-API here).
//
// Segment layout: one 4 KiB header page, then `capacity` data bytes (a multiple of 8).
// Entries are [u32 length][payload][pad to 8]. Positions are 64-bit byte counters that only grow
// (offset = pos % capacity), so "empty" is write == read and "full" is write - read == capacity with
// no ambiguity and no ABA on wrap.
//
// Wrap-around: SPLIT COPY. An entry may run off the end of the data area and continue at offset 0;
// the writer and reader copy it in two pieces. Entries start 8-aligned and capacity is a multiple of 8,
// so the 4-byte length word itself never splits. Split copy (rather than a wrap marker) means any
// frame up to capacity - 4 bytes fits once the ring drains; with a wrap marker, frames larger than
// half the ring could wait forever depending on where the ring happens to be empty.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace chorus {

constexpr uint32_t kRingMagic = 0x47524843;  // "CHRG" little-endian
constexpr uint32_t kRingVersion = 3;  // 2: the consumer waits on a doorbell FIFO, not a futex; 3: readerTid
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint64_t kMinCapacity = 64;
constexpr uint64_t kMaxCapacity = uint64_t(1) << 34;  // 16 GiB: far beyond any edge, catches unit mix-ups

// Lives at offset 0 of the segment. Every field the other process writes is an atomic on its own cache
// line, so the producer's stores do not bounce the consumer's line (false sharing costs ~100 ns/frame).
struct RingHeader {
  std::atomic<uint32_t> magic;  // stored last (release) by the creator: attach checks it (acquire)
  uint32_t version;
  uint64_t capacity;
  int32_t ownerPid;
  uint32_t reserved;
  alignas(64) std::atomic<uint64_t> writePos;  // written by the producer only
  alignas(64) std::atomic<uint64_t> readPos;   // written by the consumer only
  // The consumer waits on the doorbell FIFO from its event loop; the producer rings it only when
  // readerWaiting is set, so a write costs no syscall while the consumer is busy.
  alignas(64) std::atomic<uint32_t> unused;  // version 1's futex word for the consumer
  std::atomic<uint32_t> readerWaiting;
  // The waiting consumer's thread when its process publishes it (Ring::PublishReaderThread), else 0: the producer
  // that rings the doorbell moves it off the producer's own core (Ring::TryWrite).
  std::atomic<int32_t> readerTid;
  // The producer sleeps on roomSeq when the ring is full; symmetric to the above.
  alignas(64) std::atomic<uint32_t> roomSeq;
  std::atomic<uint32_t> writerWaiting;
};
static_assert(sizeof(RingHeader) <= kHeaderBytes, "header must fit its page");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared atomics must be lock-free");

// Carries a stable CHORUS_ERR_* code to the JS layer.
class RingError : public std::runtime_error {
 public:
  RingError(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

enum class WaitStatus : int { kReady = 0, kTimeout = 1, kClosed = 2 };

// RingHeader::readerWaiting: whether the producer must ring the consumer's doorbell.
constexpr uint32_t kNoWaiter = 0;
constexpr uint32_t kBellWaiter = 1;

struct Slice {
  const uint8_t* data;
  size_t length;
};

class Ring {
 public:
  static std::unique_ptr<Ring> Create(const std::string& name, uint64_t capacityBytes);
  static std::unique_ptr<Ring> Attach(const std::string& name);
  // Removes the name (and the doorbell's); the memory lives on until every process unmaps it. False if
  // neither existed.
  static bool Unlink(const std::string& name);
  // The ring's doorbell: a FIFO beside the segment (/dev/shm/<name>.bell) that the producer writes a byte to
  // when the consumer waits on it. The consumer watches it from its own event loop (epoll), so a frame reaches
  // JS in one wake-up; a futex waits on a thread, which then has to wake the JS thread too.
  static std::string BellPath(const std::string& name) { return "/dev/shm" + name + ".bell"; }
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  const std::string& name() const { return name_; }
  int bellFd() const { return bellFd_; }
  uint64_t capacity() const { return capacity_; }
  int32_t ownerPid() const { return header_->ownerPid; }
  uint64_t maxFrameBytes() const;
  uint64_t usedBytes() const;
  static uint64_t EntryBytes(uint64_t frameBytes) { return (4 + frameBytes + 7) & ~uint64_t(7); }

  // Producer side. Writes the parts as ONE frame; false when there is no room right now.
  // Throws CHORUS_ERR_FRAME_TOO_LARGE when the frame could never fit.
  bool TryWrite(const Slice* parts, size_t count);
  // Consumer side. Length of the next frame, or -1 when empty. Throws CHORUS_ERR_FRAME_INVALID when the
  // length word is impossible (a corrupted or foreign segment), rather than reading out of bounds.
  int64_t PeekFrameLength() const;
  // Copies the frame PeekFrameLength() reported into dst, frees its room and wakes a sleeping producer.
  void ConsumeFrame(uint8_t* dst, uint64_t length);

  // Producer's blocking wait for room: for a background thread only, never the JS thread. Returns kClosed as
  // soon as `cancel` is set and InterruptRoomWait() called; that bump of the sequence word is harmless to the
  // peer: to a sleeper it only ever means "re-check".
  WaitStatus WaitForRoom(uint64_t frameBytes, double deadlineMs, const std::atomic<bool>& cancel);
  void InterruptRoomWait();
  // Consumer, waiting for data on its doorbell (bell.h): announces the wait and returns true when data is
  // already there (then nothing is announced). Disarm after the bell rang or the wait ended.
  bool ArmDataBell();
  // This process's consumers publish their thread when they wait (stage processes: never main), so the producer
  // that wakes one moves it off the producer's core: a woken thread is placed on its waker's core by kernels that
  // pack (bench/NOTES.md, "Wake-ups packed onto the waker's core"), and would take it from the producer.
  static void PublishReaderThread(bool on);
  // Before this thread wakes `tid`: its affinity without this core (the mask it had in `was`), so the wake-up places it
  // on another core it may run on; false (nothing changed) when it may only run here, or it is gone. After the
  // wake-up, RestoreAffinity gives the mask back (a thread already placed elsewhere stays there).
  static bool KeepOffThisCore(pid_t tid, cpu_set_t* was);
  static void RestoreAffinity(pid_t tid, const cpu_set_t& was);
  void DisarmDataBell();
  // Consumer: whether a frame is there to read.
  bool HasData() const;

 private:
  Ring(std::string name, int fd, void* base, uint64_t mappedBytes, int bellFd);
  void CopyIn(uint64_t pos, const uint8_t* src, uint64_t n);
  void CopyOut(uint64_t pos, uint8_t* dst, uint64_t n) const;
  uint64_t Offset(uint64_t pos) const { return pos % capacity_; }

  std::string name_;
  int fd_;
  int bellFd_;  // the doorbell, opened O_RDWR | O_NONBLOCK: writing never blocks, and needs no reader open
  void* base_;
  uint64_t mappedBytes_;
  RingHeader* header_;
  uint8_t* data_;
  uint64_t capacity_;
};

// Keeps thread `tid` off this thread's core while the guard lives (Ring::KeepOffThisCore: the wake-up it brackets
// places the thread elsewhere) and gives its mask back when the guard ends, also when a throw ends it.
class KeptOffThisCore {
 public:
  explicit KeptOffThisCore(pid_t tid) : tid_(tid), kept_(tid > 0 && Ring::KeepOffThisCore(tid, &was_)) {}
  ~KeptOffThisCore() {
    if (kept_) Ring::RestoreAffinity(tid_, was_);
  }
  KeptOffThisCore(const KeptOffThisCore&) = delete;
  KeptOffThisCore& operator=(const KeptOffThisCore&) = delete;

 private:
  const pid_t tid_;
  cpu_set_t was_;
  const bool kept_;
};

}  // namespace chorus
