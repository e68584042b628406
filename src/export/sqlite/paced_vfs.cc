#include "export/sqlite/paced_vfs.h"

#include <sqlite3.h>

#include <mutex>

namespace infertel::exporting {
namespace {

thread_local pipeline::Pacer* t_pacer = nullptr;

sqlite3_vfs* g_real = nullptr;  // the wrapped default VFS
sqlite3_vfs g_paced;            // a copy of it with our xOpen
sqlite3_io_methods g_methods;   // the real file methods, plus pacing

// Our file is the real VFS's file, placed right after this header in the same allocation.
struct PacedFile {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<PacedFile*>(f)->real; }

void Pace() {
  if (t_pacer != nullptr) t_pacer->Between();
}

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* p, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), p, n, off);
}
int Write(sqlite3_file* f, const void* p, int n, sqlite3_int64 off) {
  const int rc = Real(f)->pMethods->xWrite(Real(f), p, n, off);
  Pace();
  return rc;
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  const int rc = Real(f)->pMethods->xSync(Real(f), flags);
  Pace();
  return rc;
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int l) { return Real(f)->pMethods->xLock(Real(f), l); }
int Unlock(sqlite3_file* f, int l) { return Real(f)->pMethods->xUnlock(Real(f), l); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** p) {
  return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, p);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** p) {
  return Real(f)->pMethods->xFetch(Real(f), off, n, p);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  auto* pf = reinterpret_cast<PacedFile*>(f);
  pf->real = reinterpret_cast<sqlite3_file*>(pf + 1);
  const int rc = g_real->xOpen(g_real, name, pf->real, flags, out_flags);
  // SQLite calls xClose only when pMethods is set, which the real VFS does on success (and on
  // some failures): mirror it, so that the real file is closed exactly when it must be.
  pf->base.pMethods = pf->real->pMethods != nullptr ? &g_methods : nullptr;
  return rc;
}

void Register() {
  g_real = sqlite3_vfs_find(nullptr);
  if (g_real == nullptr) return;
  g_paced = *g_real;
  g_paced.zName = "infertel-paced";
  g_paced.szOsFile = static_cast<int>(sizeof(PacedFile)) + g_real->szOsFile;
  g_paced.xOpen = Open;
  g_paced.pNext = nullptr;
  g_methods = sqlite3_io_methods{};
  // Version 3: shared memory (the WAL index) and memory-mapped reads, as the unix VFS has.
  g_methods.iVersion = 3;
  g_methods.xClose = Close;
  g_methods.xRead = Read;
  g_methods.xWrite = Write;
  g_methods.xTruncate = Truncate;
  g_methods.xSync = Sync;
  g_methods.xFileSize = FileSize;
  g_methods.xLock = Lock;
  g_methods.xUnlock = Unlock;
  g_methods.xCheckReservedLock = CheckReservedLock;
  g_methods.xFileControl = FileControl;
  g_methods.xSectorSize = SectorSize;
  g_methods.xDeviceCharacteristics = DeviceCharacteristics;
  g_methods.xShmMap = ShmMap;
  g_methods.xShmLock = ShmLock;
  g_methods.xShmBarrier = ShmBarrier;
  g_methods.xShmUnmap = ShmUnmap;
  g_methods.xFetch = Fetch;
  g_methods.xUnfetch = Unfetch;
  if (sqlite3_vfs_register(&g_paced, 0) != SQLITE_OK) g_real = nullptr;
}

}  // namespace

const char* PacedVfsName() {
  static std::once_flag once;
  std::call_once(once, Register);
  return g_real != nullptr ? g_paced.zName : nullptr;
}

void PaceBetweenRows() { Pace(); }
bool ThreadIsPaced() { return t_pacer != nullptr; }

PaceWritesOnThisThread::PaceWritesOnThisThread(pipeline::Pacer* pacer) : previous_(t_pacer) {
  pacer->Start();
  t_pacer = pacer;
}
PaceWritesOnThisThread::~PaceWritesOnThisThread() { t_pacer = previous_; }

}  // namespace infertel::exporting
