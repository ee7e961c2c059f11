#include "libcache/verify/lmdb_verify.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "libcache/base/coding.h"
#include "libcache/format/record_format.h"
#include "libcache/store/lmdb_store.h"

namespace yc {
namespace {

std::string StripRecordPrefix(const std::string& m) { return m.rfind("record: ", 0) == 0 ? m.substr(8) : m; }

// Checks every record with plain std::threads: this also runs in a forked child, where TBB's
// global scheduler (inherited half-alive from the parent) must not be touched.
void CheckAll(const std::filesystem::path& path, const RecordLimits& limits, LmdbVerifyResult* result) {
  auto reader = LmdbReader::Open(path, LmdbReaderOptions{/*verify_checksums=*/true, limits});
  if (!reader.ok()) {
    result->problems.push_back({-1, "", reader.status().message()});
    return;
  }
  const LmdbReader& r = *reader.value();
  result->records = r.size();
  const size_t n = r.size();
  const size_t threads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), (n + 63) / 64));
  std::vector<std::vector<LmdbProblem>> found(threads);
  std::vector<uint64_t> boxes(threads, 0), backgrounds(threads, 0);
  auto work = [&](size_t t) {
    ScratchBuffer scratch;
    for (size_t i = t; i < n; i += threads) {
      RecordView view;
      const std::string_view v = r.value(i);
      const Status s = DecodeRecord(reinterpret_cast<const uint8_t*>(v.data()), v.size(), true, &view, &scratch, limits);
      if (!s.ok()) {
        found[t].push_back({static_cast<int64_t>(i),
                            std::string(RecordSourcePath(reinterpret_cast<const uint8_t*>(v.data()), v.size())),
                            StripRecordPrefix(s.message())});
      } else {
        boxes[t] += view.box_count;
        backgrounds[t] += view.box_count == 0;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  result->walked = true;
  for (size_t t = 0; t < threads; ++t) {
    result->boxes += boxes[t];
    result->backgrounds += backgrounds[t];
  }
  for (auto& f : found) result->problems.insert(result->problems.end(), f.begin(), f.end());
  std::sort(result->problems.begin(), result->problems.end(),
            [](const LmdbProblem& a, const LmdbProblem& b) { return a.record < b.record; });
}

// Child -> parent wire format: 'P' i64 record, u32 len, source, u32 len, message; then 'E' u64 records,
// u8 walked, u64 boxes, u64 backgrounds.
void PutString(std::string* out, const std::string& s) {
  uint8_t len[4];
  EncodeFixed32(len, static_cast<uint32_t>(s.size()));
  out->append(reinterpret_cast<const char*>(len), 4);
  out->append(s);
}

std::string Serialize(const LmdbVerifyResult& r) {
  std::string out;
  for (const LmdbProblem& p : r.problems) {
    out.push_back('P');
    uint8_t rec[8];
    EncodeFixed64(rec, static_cast<uint64_t>(p.record));
    out.append(reinterpret_cast<const char*>(rec), 8);
    PutString(&out, p.source);
    PutString(&out, p.message);
  }
  out.push_back('E');
  uint8_t count[8];
  EncodeFixed64(count, r.records);
  out.append(reinterpret_cast<const char*>(count), 8);
  out.push_back(r.walked ? 1 : 0);
  uint8_t totals[16];
  EncodeFixed64(totals, r.boxes);
  EncodeFixed64(totals + 8, r.backgrounds);
  out.append(reinterpret_cast<const char*>(totals), 16);
  return out;
}

bool Deserialize(const std::string& in, LmdbVerifyResult* r) {
  size_t pos = 0;
  auto get = [&](size_t n, const uint8_t** p) {
    if (in.size() - pos < n) return false;
    *p = reinterpret_cast<const uint8_t*>(in.data()) + pos;
    pos += n;
    return true;
  };
  auto get_string = [&](std::string* s) {
    const uint8_t* p;
    if (!get(4, &p)) return false;
    const uint32_t len = DecodeFixed32(p);
    if (!get(len, &p)) return false;
    s->assign(reinterpret_cast<const char*>(p), len);
    return true;
  };
  while (pos < in.size()) {
    const char tag = in[pos++];
    const uint8_t* p;
    if (tag == 'E') {
      if (!get(25, &p)) return false;
      r->records = DecodeFixed64(p);
      r->walked = p[8] != 0;
      r->boxes = DecodeFixed64(p + 9);
      r->backgrounds = DecodeFixed64(p + 17);
      return pos == in.size();
    }
    if (tag != 'P') return false;
    LmdbProblem problem;
    if (!get(8, &p)) return false;
    problem.record = static_cast<int64_t>(DecodeFixed64(p));
    if (!get_string(&problem.source) || !get_string(&problem.message)) return false;
    r->problems.push_back(std::move(problem));
  }
  return false;  // no end marker: the child died mid-report
}

bool WriteAllFd(int fd, const std::string& data) {
  const char* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

LmdbVerifyResult VerifyLmdbRecords(const std::filesystem::path& path, bool isolate, const RecordLimits& limits) {
  LmdbVerifyResult result;
  int fds[2];
  if (!isolate || ::pipe2(fds, O_CLOEXEC) != 0) {
    CheckAll(path, limits, &result);
    return result;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    CheckAll(path, limits, &result);
    return result;
  }
  if (pid == 0) {
    // Child: opens its own environment (LMDB's rule: never use an env across fork), reports, exits
    // without running the parent's atexit handlers or destructors.
    ::close(fds[0]);
    LmdbVerifyResult child;
    CheckAll(path, limits, &child);
    const bool ok = WriteAllFd(fds[1], Serialize(child));
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string report;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const bool clean_exit = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  if (clean_exit && Deserialize(report, &result)) return result;
  LmdbVerifyResult partial;
  Deserialize(report, &partial);  // whatever arrived before the crash
  result = partial;
  result.walked = false;
  std::string why = WIFSIGNALED(wstatus) ? "killed by signal " + std::to_string(WTERMSIG(wstatus))
                                         : "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  result.problems.push_back({-1, "", path.string() + ": LMDB B-tree is damaged: the reader process " + why +
                                         " while walking it (LMDB pages carry no checksums)"});
  return result;
}

}  // namespace yc
