// The MPI world of a distributed run (docs/distributed.md), behind a small interface: string
// messages with a tag between ranks. This header has no MPI in it; mpi.cpp is the one file that
// includes <mpi.h>, and a build without MPI (WM_WITH_MPI off or Open MPI not found) compiles
// the same interface to a clear refusal.
#pragma once

#include <string>

namespace wm::distributed {

/// Whether this wmtune was built with MPI.
bool builtWithMpi();
/// Whether an MPI launcher (mpirun, mpiexec, srun) started this process: it sets
/// OMPI_COMM_WORLD_SIZE (Open MPI), PMIX_RANK (PMIx) or PMI_SIZE (MPICH, Slurm).
bool startedByMpiLauncher();

/// What the ranks say to each other (cluster.h).
enum class Tag : int { Hello = 1, Measure, Result, Job, Record, JobDone, Stop };

struct Message {
  int source = -1;
  Tag tag = Tag::Stop;
  std::string payload;
};

/// MPI_Init on construction, MPI_Finalize on destruction; one per process.
class Mpi {
public:
  /// UserError (exit 2) when this build has no MPI or no MPI launcher started the process.
  Mpi();
  /// MPI_Finalize (every rank waits there for the others).
  ~Mpi();
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// This rank's host name (MPI_Get_processor_name).
  const std::string& host() const { return host_; }

  void send(int dest, Tag tag, const std::string& payload);
  /// The next message from any rank. It waits by polling every millisecond rather than in a
  /// blocking receive, which spins a core in Open MPI: a waiting rank must not slow down a
  /// measurement running on the same machine.
  Message receive();
  /// Ends every rank of the job with this exit code.
  [[noreturn]] void abort(int code);
  /// An error on this rank. Rank 0 whose workers were told to stop (or that has none) returns,
  /// and the caller goes on to report it and exit 2 after MPI_Finalize; anywhere else the
  /// others would wait for this rank forever, so it prints the error with its rank and host and
  /// aborts the job with exit code 2.
  void fail(const std::string& what);
  /// The coordinator told every worker to stop: rank 0 may end normally.
  void peersReleased() { released_ = true; }

private:
  int rank_ = 0, size_ = 1;
  bool released_ = false;
  std::string host_;
};

} // namespace wm::distributed
