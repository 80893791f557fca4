#include "ring.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "futex.h"

namespace chorus {
namespace {

constexpr const char* kErrShm = "CHORUS_ERR_SHM";
constexpr const char* kErrTooLarge = "CHORUS_ERR_FRAME_TOO_LARGE";
constexpr const char* kErrInvalid = "CHORUS_ERR_FRAME_INVALID";

std::string Errno(const char* what, const std::string& name, int err) {
  return std::string(what) + " " + name + ": " + std::strerror(err);
}

void CheckName(const std::string& name) {
  // POSIX portable shm names: one leading slash, no other slash, short enough for NAME_MAX.
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos || name.size() > NAME_MAX) {
    throw RingError(kErrShm, "invalid shared-memory name '" + name + "': expected /chorus-<pid>-<hex>");
  }
}

std::atomic<bool> publishReader{false};

}  // namespace

// A thread this one is about to wake goes where this core is not: its affinity without this core while the wake-up
// places it, then back as it was. Moved after the wake-up instead, it had often run already: a woken thread may
// preempt its waker at once (the syscall's return), and the Talker woken by the Thinker's first rows took the
// Thinker's core for its whole prefill while the other core idled, in 6 of 60 c=1 answers (bench/NOTES.md, "The
// wake-up's move came after the wake-up"). Nothing when it may only run here, or it is gone.
bool Ring::KeepOffThisCore(pid_t tid, cpu_set_t* was) {
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  CPU_ZERO(was);
  if (sched_getaffinity(tid, sizeof *was, was) != 0 || !CPU_ISSET(cpu, was) || CPU_COUNT(was) < 2) return false;
  cpu_set_t elsewhere = *was;
  CPU_CLR(cpu, &elsewhere);
  return sched_setaffinity(tid, sizeof elsewhere, &elsewhere) == 0;
}

void Ring::RestoreAffinity(pid_t tid, const cpu_set_t& was) { sched_setaffinity(tid, sizeof was, &was); }

void Ring::PublishReaderThread(bool on) { publishReader.store(on, std::memory_order_relaxed); }

// Linux opens a FIFO O_RDWR without waiting for a peer; O_NONBLOCK: a full pipe is already a rung bell.
static int OpenBell(const std::string& name) { return open(Ring::BellPath(name).c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC); }

Ring::Ring(std::string name, int fd, void* base, uint64_t mappedBytes, int bellFd)
    : name_(std::move(name)),
      fd_(fd),
      bellFd_(bellFd),
      base_(base),
      mappedBytes_(mappedBytes),
      header_(static_cast<RingHeader*>(base)),
      data_(static_cast<uint8_t*>(base) + kHeaderBytes),
      capacity_(mappedBytes - kHeaderBytes) {}

Ring::~Ring() {
  munmap(base_, mappedBytes_);
  close(fd_);
  close(bellFd_);
}

std::unique_ptr<Ring> Ring::Create(const std::string& name, uint64_t capacityBytes) {
  CheckName(name);
  uint64_t capacity = (capacityBytes + 7) & ~uint64_t(7);
  if (capacity < kMinCapacity || capacity > kMaxCapacity) {
    throw RingError(kErrShm, "ring capacity " + std::to_string(capacityBytes) + " bytes is out of range [" +
                                 std::to_string(kMinCapacity) + ", " + std::to_string(kMaxCapacity) + "]");
  }
  // O_EXCL: never adopt a segment somebody else made (a stale one, or an attacker's with our name).
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw RingError(kErrShm, Errno("shm_open(O_CREAT|O_EXCL)", name, errno));
  uint64_t total = kHeaderBytes + capacity;
  // fchmod: the umask can only narrow 0600, but state the intent explicitly. posix_fallocate reserves
  // the tmpfs pages now, so a full /dev/shm fails here with ENOSPC instead of SIGBUS on a later write.
  int err = 0;
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(total)) != 0) err = errno;
  if (err == 0) err = posix_fallocate(fd, 0, static_cast<off_t>(total));
  void* base = MAP_FAILED;
  if (err == 0) {
    base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) err = errno;
  }
  int bellFd = -1;
  if (err == 0 && mkfifo(BellPath(name).c_str(), 0600) != 0) err = errno;
  if (err == 0 && (bellFd = OpenBell(name)) < 0) err = errno;
  if (err != 0) {
    if (base != MAP_FAILED) munmap(base, total);
    if (err != EEXIST) unlink(BellPath(name).c_str());
    shm_unlink(name.c_str());
    close(fd);
    std::string hint = err == ENOSPC ? " (/dev/shm is full: lower the ring capacity or enlarge /dev/shm)" : "";
    throw RingError(kErrShm, Errno("cannot size/map segment", name, err) + hint);
  }
  auto* h = new (base) RingHeader();
  h->version = kRingVersion;
  h->capacity = capacity;
  h->ownerPid = static_cast<int32_t>(getpid());
  h->writePos.store(0, std::memory_order_relaxed);
  h->readPos.store(0, std::memory_order_relaxed);
  h->unused.store(0, std::memory_order_relaxed);
  h->readerWaiting.store(0, std::memory_order_relaxed);
  h->readerTid.store(0, std::memory_order_relaxed);
  h->roomSeq.store(0, std::memory_order_relaxed);
  h->writerWaiting.store(0, std::memory_order_relaxed);
  h->magic.store(kRingMagic, std::memory_order_release);  // last: publishes the initialised header
  return std::unique_ptr<Ring>(new Ring(name, fd, base, total, bellFd));
}

std::unique_ptr<Ring> Ring::Attach(const std::string& name) {
  CheckName(name);
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    std::string hint = err == ENOENT ? " (the owner has not created it yet, or already unlinked it)" : "";
    throw RingError(kErrShm, Errno("shm_open", name, err) + hint);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kHeaderBytes + kMinCapacity) {
    close(fd);
    throw RingError(kErrShm, "segment " + name + " is too small to be a Chorus ring");
  }
  uint64_t total = static_cast<uint64_t>(st.st_size);
  // MAP_POPULATE: map every page of the segment now (Create's posix_fallocate made them), so a frame is not charged
  // a page fault per 4 KiB the first time the positions reach that part of the ring, in the producer and again in
  // the consumer: a ring of 16 MiB wraps only after that many bytes, so most of a run's frames landed on pages never
  // touched before (issue 46: a 240 KB frame's write took 0.22-0.24 ms, 0.09-0.10 ms with the pages mapped). The
  // cost is paid once here, at attach (a stage's boot), for the pages of the rings that touch the process. Create
  // does not populate: the owner only makes the segment and closes it (ShmConnector.createRings).
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    throw RingError(kErrShm, Errno("mmap", name, err));
  }
  auto* h = static_cast<RingHeader*>(base);
  if (h->magic.load(std::memory_order_acquire) != kRingMagic || h->version != kRingVersion ||
      h->capacity + kHeaderBytes != total) {
    munmap(base, total);
    close(fd);
    throw RingError(kErrShm, "segment " + name + " is not an initialised Chorus ring of version " +
                                 std::to_string(kRingVersion));
  }
  int bellFd = OpenBell(name);
  if (bellFd < 0) {
    int err = errno;
    munmap(base, total);
    close(fd);
    throw RingError(kErrShm, Errno("cannot open the doorbell of", name, err));
  }
  return std::unique_ptr<Ring>(new Ring(name, fd, base, total, bellFd));
}

bool Ring::Unlink(const std::string& name) {
  CheckName(name);
  bool bell = unlink(BellPath(name).c_str()) == 0;
  if (!bell && errno != ENOENT) throw RingError(kErrShm, Errno("unlink the doorbell of", name, errno));
  if (shm_unlink(name.c_str()) == 0) return true;
  if (errno == ENOENT) return bell;
  throw RingError(kErrShm, Errno("shm_unlink", name, errno));
}

uint64_t Ring::maxFrameBytes() const {
  // EntryBytes(len) <= capacity; capacity is a multiple of 8, so that is len <= capacity - 4.
  return std::min<uint64_t>(capacity_ - 4, UINT32_MAX - 8);
}

uint64_t Ring::usedBytes() const {
  return header_->writePos.load(std::memory_order_acquire) - header_->readPos.load(std::memory_order_acquire);
}

void Ring::CopyIn(uint64_t pos, const uint8_t* src, uint64_t n) {
  uint64_t off = Offset(pos);
  uint64_t first = std::min(n, capacity_ - off);
  std::memcpy(data_ + off, src, first);
  if (n > first) std::memcpy(data_, src + first, n - first);
}

void Ring::CopyOut(uint64_t pos, uint8_t* dst, uint64_t n) const {
  uint64_t off = Offset(pos);
  uint64_t first = std::min(n, capacity_ - off);
  std::memcpy(dst, data_ + off, first);
  if (n > first) std::memcpy(dst + first, data_, n - first);
}

bool Ring::TryWrite(const Slice* parts, size_t count) {
  uint64_t total = 0;
  for (size_t i = 0; i < count; i++) total += parts[i].length;
  if (total > maxFrameBytes()) {
    throw RingError(kErrTooLarge, "frame of " + std::to_string(total) + " bytes can never fit ring " + name_ +
                                      " (max " + std::to_string(maxFrameBytes()) +
                                      " bytes): raise the ring capacity or split the frame");
  }
  uint64_t entry = EntryBytes(total);
  uint64_t w = header_->writePos.load(std::memory_order_relaxed);
  uint64_t r = header_->readPos.load(std::memory_order_acquire);  // pairs with the consumer's release
  if (capacity_ - (w - r) < entry) return false;
  uint32_t len32 = static_cast<uint32_t>(total);
  std::memcpy(data_ + Offset(w), &len32, sizeof len32);  // never splits: w is 8-aligned
  uint64_t pos = w + 4;
  for (size_t i = 0; i < count; i++) {
    CopyIn(pos, parts[i].data, parts[i].length);
    pos += parts[i].length;
  }
  header_->writePos.store(w + entry, std::memory_order_release);
  // Dekker handshake with ArmDataBell: it stores readerWaiting then re-reads writePos; we store
  // writePos then read readerWaiting. The two seq_cst fences guarantee at least one side sees the
  // other's store, so either the consumer does not sleep or we wake it. Without them a wake-up is lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Exchange: of several frames written before the consumer runs, only the first rings.
  if (header_->readerWaiting.load(std::memory_order_relaxed) != kNoWaiter &&
      header_->readerWaiting.exchange(kNoWaiter, std::memory_order_relaxed) != kNoWaiter) {
    KeptOffThisCore kept(header_->readerTid.load(std::memory_order_relaxed));
    const char ring = 1;
    ssize_t written = write(bellFd_, &ring, 1);  // EAGAIN: the pipe is full, so the bell rang already
    (void)written;
  }
  return true;
}

bool Ring::HasData() const {
  return header_->writePos.load(std::memory_order_acquire) != header_->readPos.load(std::memory_order_acquire);
}

bool Ring::ArmDataBell() {
  const bool publish = publishReader.load(std::memory_order_relaxed);
  // The thread's id, read once per thread (a system call; waits are armed every idle turn).
  thread_local const int32_t tid = static_cast<int32_t>(syscall(SYS_gettid));
  header_->readerTid.store(publish ? tid : 0, std::memory_order_relaxed);
  // Dekker handshake with TryWrite (see there).
  header_->readerWaiting.store(kBellWaiter, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!HasData()) return false;
  header_->readerWaiting.store(kNoWaiter, std::memory_order_relaxed);
  return true;
}

void Ring::DisarmDataBell() { header_->readerWaiting.store(kNoWaiter, std::memory_order_relaxed); }

int64_t Ring::PeekFrameLength() const {
  uint64_t r = header_->readPos.load(std::memory_order_relaxed);
  uint64_t w = header_->writePos.load(std::memory_order_acquire);  // pairs with the producer's release
  if (w == r) return -1;
  uint64_t used = w - r;
  uint32_t len32;
  std::memcpy(&len32, data_ + Offset(r), sizeof len32);
  if (used < 8 || used > capacity_ || (r & 7) != 0 || EntryBytes(len32) > used) {
    throw RingError(kErrInvalid, "ring " + name_ + " is corrupted (entry length " + std::to_string(len32) +
                                     ", " + std::to_string(used) + " bytes used): recreate the edge");
  }
  return len32;
}

void Ring::ConsumeFrame(uint8_t* dst, uint64_t length) {
  uint64_t r = header_->readPos.load(std::memory_order_relaxed);
  CopyOut(r + 4, dst, length);
  header_->readPos.store(r + EntryBytes(length), std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // Dekker with WaitForRoom, as in TryWrite
  if (header_->writerWaiting.load(std::memory_order_relaxed) != 0) {
    header_->roomSeq.fetch_add(1, std::memory_order_release);
    FutexWakeAll(&header_->roomSeq);
  }
}

WaitStatus Ring::WaitForRoom(uint64_t frameBytes, double deadlineMs, const std::atomic<bool>& cancel) {
  uint64_t entry = EntryBytes(frameBytes);
  auto hasRoom = [this, entry] {
    uint64_t used = header_->writePos.load(std::memory_order_acquire) - header_->readPos.load(std::memory_order_acquire);
    return capacity_ - used >= entry;
  };
  for (;;) {
    if (hasRoom()) return WaitStatus::kReady;
    if (cancel.load(std::memory_order_acquire)) return WaitStatus::kClosed;
    if (NowMs() >= deadlineMs) return WaitStatus::kTimeout;
    uint32_t seq = header_->roomSeq.load(std::memory_order_acquire);
    header_->writerWaiting.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!hasRoom() && !cancel.load(std::memory_order_relaxed)) FutexWaitUntil(&header_->roomSeq, seq, deadlineMs);
    header_->writerWaiting.store(0, std::memory_order_relaxed);
  }
}

void Ring::InterruptRoomWait() {
  header_->roomSeq.fetch_add(1, std::memory_order_seq_cst);
  FutexWakeAll(&header_->roomSeq);
}

}  // namespace chorus
