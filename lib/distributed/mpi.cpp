// The MPI world (see mpi.h): the only file that includes <mpi.h>.
#include <wm/distributed/mpi.h>
#include <wm/support/error.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#ifdef WM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings need libmpi_cxx)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace wm::distributed {

bool builtWithMpi() {
#ifdef WM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool startedByMpiLauncher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef WM_HAVE_MPI

Mpi::Mpi() {
  if (!startedByMpiLauncher())
    WM_USER_ERROR() << "--distributed mpi: this process was not started by an MPI launcher; run "
                       "`mpirun -np N wmtune tune ... --distributed mpi` (N >= 2)";
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    WM_USER_ERROR() << "--distributed mpi: MPI_Init failed";
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, static_cast<size_t>(len));
  released_ = size_ == 1;
}

Mpi::~Mpi() {
  MPI_Finalize();
}

void Mpi::send(int dest, Tag tag, const std::string& payload) {
  WM_CHECK(payload.size() < (1u << 31)) << "MPI message of " << payload.size() << " bytes";
  if (MPI_Send(payload.data(), static_cast<int>(payload.size()), MPI_CHAR, dest,
               static_cast<int>(tag), MPI_COMM_WORLD) != MPI_SUCCESS)
    WM_USER_ERROR() << "MPI_Send to rank " << dest << " failed";
}

Message Mpi::receive() {
  MPI_Status st;
  int flag = 0;
  while (true) {
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (flag) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  Message m;
  m.source = st.MPI_SOURCE;
  m.tag = static_cast<Tag>(st.MPI_TAG);
  m.payload.resize(static_cast<size_t>(count));
  MPI_Recv(m.payload.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return m;
}

void Mpi::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // not reached
}

void Mpi::fail(const std::string& what) {
  if (rank_ == 0 && released_) return;
  spdlog::error("rank {} ({}): {}", rank_, host_, what);
  abort(2);
}

#else // built without MPI: the same interface, refusing

Mpi::Mpi() {
  WM_USER_ERROR() << "--distributed mpi: this wmtune was built without MPI (install Open MPI, "
                     "e.g. Debian's libopenmpi-dev openmpi-bin, and rebuild with WM_WITH_MPI=ON)";
}
Mpi::~Mpi() = default;
void Mpi::send(int, Tag, const std::string&) {}
Message Mpi::receive() {
  return {};
}
void Mpi::abort(int code) {
  std::_Exit(code);
}
void Mpi::fail(const std::string&) {}

#endif

} // namespace wm::distributed
