// Files and folders a process names after its pid while it writes them: a cache build's staging dir
// ".<cache>.building-<pid>" (atomic_dir.h), a checkpoint or export written as ".<name>.tmp-<pid>" and
// renamed into place. A kill -9 or a power loss leaves them behind; the next process writing into that
// folder removes those whose process is gone. Only names of exactly that form count (a user's
// ".notes.tmp-old" or ".x.tmp-12a" is not ours), and a live pid's files are never touched.
//
//   fs::path tmp = dir / TempFileName("last.pt");   // ".last.pt.tmp-4242"
//   RemoveStaleTempFiles(dir);                       // at the start of the next command writing there
#pragma once

#include <filesystem>
#include <string>

namespace yc {

// Whether a process with this pid exists (one of another user counts: kill(2) says EPERM).
bool ProcessAlive(long pid);

// The pid in a name that is exactly `prefix` + decimal digits, else -1.
long TaggedPid(const std::string& name, const std::string& prefix);

// ".<name>.tmp-<our pid>": the temp file beside `name` that is written, then renamed over it.
std::string TempFileName(const std::string& name);

// Removes the regular files in `dir` named ".<something>.tmp-<pid>" whose process is gone, and nothing
// else (no links, folders or other names). Best effort: an unreadable folder is left as it is.
void RemoveStaleTempFiles(const std::filesystem::path& dir);

}  // namespace yc
