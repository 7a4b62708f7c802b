// The one table of intercepted MPI functions. Each row:
//   X(name, kind, (parameters), (arguments), before, after)
// `before` runs ahead of the PMPI call and `after` behind it, only while
// recording; both call ordinary functions of mpi_wrappers.cc (OnInit,
// PointToPoint, Collective, ...) on its MpiCall `c`. mpi_wrappers.cc then
// turns every row into a wrapper; nothing is hand-written twice.
#pragma once

#define DLTRACE_MPI_FUNCTIONS(X)                                                                    \
  /* setup and communicators */                                                                     \
  X(MPI_Init, MpiInit, (int* argc, char*** argv), (argc, argv), , OnInit(c))                        \
  X(MPI_Init_thread, MpiInit, (int* argc, char*** argv, int required, int* provided),               \
    (argc, argv, required, provided), , OnInit(c))                                                  \
  X(MPI_Finalize, MpiFinalize, (), (), , OnFinalize(c))                                             \
  X(MPI_Abort, MpiAbort, (MPI_Comm comm, int errorcode), (comm, errorcode), OnAbort(c, comm), )     \
  X(MPI_Comm_dup, Unknown, (MPI_Comm comm, MPI_Comm * newcomm), (comm, newcomm), ,                  \
    OnNewComm(c, comm, newcomm, "dup", 0, 0))                                                       \
  X(MPI_Comm_split, Unknown, (MPI_Comm comm, int color, int key, MPI_Comm* newcomm),                \
    (comm, color, key, newcomm), , OnNewComm(c, comm, newcomm, "split", color, key))                \
  X(MPI_Comm_split_type, Unknown,                                                                   \
    (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm),                     \
    (comm, split_type, key, info, newcomm), ,                                                       \
    OnNewComm(c, comm, newcomm, "split_type", split_type, key))                                     \
  X(MPI_Comm_create, Unknown, (MPI_Comm comm, MPI_Group group, MPI_Comm * newcomm),                 \
    (comm, group, newcomm), , OnNewComm(c, comm, newcomm, "create", 0, 0))                          \
  X(MPI_Cart_create, Unknown,                                                                       \
    (MPI_Comm old_comm, int ndims, const int dims[], const int periods[], int reorder,             \
     MPI_Comm* comm_cart),                                                                          \
    (old_comm, ndims, dims, periods, reorder, comm_cart), ,                                         \
    OnNewComm(c, old_comm, comm_cart, "cart", 0, 0))                                                \
  X(MPI_Comm_free, Unknown, (MPI_Comm * comm), (comm), OnFreeComm(c, comm), )                       \
  /* point-to-point */                                                                              \
  X(MPI_Send, MpiSend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,       \
                        MPI_Comm comm),                                                             \
    (buf, count, datatype, dest, tag, comm), PointToPoint(c, count, datatype, dest, tag, comm), )   \
  X(MPI_Ssend, MpiSsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,     \
                          MPI_Comm comm),                                                           \
    (buf, count, datatype, dest, tag, comm), PointToPoint(c, count, datatype, dest, tag, comm), )   \
  X(MPI_Bsend, MpiBsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,     \
                          MPI_Comm comm),                                                           \
    (buf, count, datatype, dest, tag, comm), PointToPoint(c, count, datatype, dest, tag, comm), )   \
  X(MPI_Rsend, MpiRsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,     \
                          MPI_Comm comm),                                                           \
    (buf, count, datatype, dest, tag, comm), PointToPoint(c, count, datatype, dest, tag, comm), )   \
  X(MPI_Recv, MpiRecv, (void* buf, int count, MPI_Datatype datatype, int source, int tag,           \
                        MPI_Comm comm, MPI_Status* status),                                         \
    (buf, count, datatype, source, tag, comm, status),                                              \
    PointToPoint(c, count, datatype, source, tag, comm); status = c.StatusFor(status),              \
    ReceivedFrom(c, status, datatype))                                                              \
  X(MPI_Sendrecv, MpiSendrecv,                                                                      \
    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,              \
     void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,   \
     MPI_Status* status),                                                                           \
    (sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,    \
     comm, status),                                                                                 \
    SendRecv(c, sendcount, sendtype, dest, sendtag, recvcount, recvtype, source, comm);             \
    status = c.StatusFor(status), SendRecvDone(c, status, recvtype))                                \
  X(MPI_Sendrecv_replace, MpiSendrecvReplace,                                                       \
    (void* buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,   \
     MPI_Comm comm, MPI_Status* status),                                                            \
    (buf, count, datatype, dest, sendtag, source, recvtag, comm, status),                           \
    SendRecv(c, count, datatype, dest, sendtag, count, datatype, source, comm);                     \
    status = c.StatusFor(status), SendRecvDone(c, status, datatype))                                \
  X(MPI_Isend, MpiIsend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,     \
                          MPI_Comm comm, MPI_Request* request),                                     \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPoint(c, count, datatype, dest, tag, comm), c.Pend(request, datatype, false))            \
  X(MPI_Issend, MpiIssend, (const void* buf, int count, MPI_Datatype datatype, int dest, int tag,   \
                            MPI_Comm comm, MPI_Request* request),                                   \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPoint(c, count, datatype, dest, tag, comm), c.Pend(request, datatype, false))            \
  X(MPI_Irecv, MpiIrecv, (void* buf, int count, MPI_Datatype datatype, int source, int tag,         \
                          MPI_Comm comm, MPI_Request* request),                                     \
    (buf, count, datatype, source, tag, comm, request),                                             \
    PointToPoint(c, count, datatype, source, tag, comm), c.Pend(request, datatype, true))           \
  /* persistent requests: the init call is remembered, each MPI_Start records   */            \
  /* the nonblocking operation it starts (completed by Wait/Test)              */            \
  X(MPI_Send_init, MpiIsend, (const void* buf, int count, MPI_Datatype datatype, int dest,         \
                              int tag, MPI_Comm comm, MPI_Request* request),                       \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPointInit(c, count, datatype, dest, tag, comm), c.Persist(request, datatype, false))     \
  X(MPI_Bsend_init, MpiIsend, (const void* buf, int count, MPI_Datatype datatype, int dest,        \
                               int tag, MPI_Comm comm, MPI_Request* request),                      \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPointInit(c, count, datatype, dest, tag, comm), c.Persist(request, datatype, false))     \
  X(MPI_Ssend_init, MpiIssend, (const void* buf, int count, MPI_Datatype datatype, int dest,       \
                                int tag, MPI_Comm comm, MPI_Request* request),                     \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPointInit(c, count, datatype, dest, tag, comm), c.Persist(request, datatype, false))     \
  X(MPI_Rsend_init, MpiIsend, (const void* buf, int count, MPI_Datatype datatype, int dest,        \
                               int tag, MPI_Comm comm, MPI_Request* request),                      \
    (buf, count, datatype, dest, tag, comm, request),                                               \
    PointToPointInit(c, count, datatype, dest, tag, comm), c.Persist(request, datatype, false))     \
  X(MPI_Recv_init, MpiIrecv, (void* buf, int count, MPI_Datatype datatype, int source, int tag,    \
                              MPI_Comm comm, MPI_Request* request),                                \
    (buf, count, datatype, source, tag, comm, request),                                             \
    PointToPointInit(c, count, datatype, source, tag, comm), c.Persist(request, datatype, true))    \
  X(MPI_Start, Unknown, (MPI_Request * request), (request), c.Start(1, request), c.Started())       \
  X(MPI_Startall, Unknown, (int count, MPI_Request array_of_requests[]), (count, array_of_requests), \
    c.Start(count, array_of_requests), c.Started())                                                 \
  X(MPI_Request_free, Unknown, (MPI_Request * request), (request), c.Free(request), )              \
  X(MPI_Wait, MpiWait, (MPI_Request * request, MPI_Status * status), (request, status),             \
    c.Watch(1, request); status = c.StatusFor(status), c.Completed(0, status))                      \
  X(MPI_Waitall, MpiWaitall, (int count, MPI_Request array_of_requests[],                           \
                              MPI_Status* array_of_statuses),                                       \
    (count, array_of_requests, array_of_statuses),                                                  \
    c.Watch(count, array_of_requests); array_of_statuses = c.StatusesFor(count, array_of_statuses), \
    c.AllCompleted(count, array_of_statuses))                                                       \
  X(MPI_Waitany, MpiWaitany, (int count, MPI_Request array_of_requests[], int* index,               \
                              MPI_Status* status),                                                  \
    (count, array_of_requests, index, status),                                                      \
    c.Watch(count, array_of_requests); status = c.StatusFor(status), c.AnyCompleted(index, status)) \
  X(MPI_Waitsome, MpiWaitsome, (int incount, MPI_Request array_of_requests[], int* outcount,        \
                                int array_of_indices[], MPI_Status array_of_statuses[]),            \
    (incount, array_of_requests, outcount, array_of_indices, array_of_statuses),                    \
    c.Watch(incount, array_of_requests);                                                            \
    array_of_statuses = c.StatusesFor(incount, array_of_statuses),                                  \
    c.SomeCompleted(outcount, array_of_indices, array_of_statuses))                                 \
  X(MPI_Test, MpiTest, (MPI_Request * request, int* flag, MPI_Status* status),                      \
    (request, flag, status), c.Watch(1, request); status = c.StatusFor(status),                     \
    if (*flag) c.Completed(0, status))                                                              \
  X(MPI_Testall, MpiTestall, (int count, MPI_Request array_of_requests[], int* flag,                \
                              MPI_Status array_of_statuses[]),                                      \
    (count, array_of_requests, flag, array_of_statuses),                                            \
    c.Watch(count, array_of_requests); array_of_statuses = c.StatusesFor(count, array_of_statuses), \
    if (*flag) c.AllCompleted(count, array_of_statuses))                                            \
  X(MPI_Testany, MpiTestany, (int count, MPI_Request array_of_requests[], int* index, int* flag,    \
                              MPI_Status* status),                                                  \
    (count, array_of_requests, index, flag, status),                                                \
    c.Watch(count, array_of_requests); status = c.StatusFor(status),                                \
    if (*flag) c.AnyCompleted(index, status))                                                       \
  X(MPI_Testsome, MpiTestsome, (int incount, MPI_Request array_of_requests[], int* outcount,        \
                                int array_of_indices[], MPI_Status array_of_statuses[]),            \
    (incount, array_of_requests, outcount, array_of_indices, array_of_statuses),                    \
    c.Watch(incount, array_of_requests);                                                            \
    array_of_statuses = c.StatusesFor(incount, array_of_statuses),                                  \
    c.SomeCompleted(outcount, array_of_indices, array_of_statuses))                                 \
  X(MPI_Probe, MpiProbe, (int source, int tag, MPI_Comm comm, MPI_Status* status),                  \
    (source, tag, comm, status), Probe(c, source, tag, comm); status = c.StatusFor(status),         \
    ProbeDone(c, status))                                                                           \
  X(MPI_Iprobe, MpiIprobe, (int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status),     \
    (source, tag, comm, flag, status), Probe(c, source, tag, comm); status = c.StatusFor(status),   \
    if (*flag) ProbeDone(c, status))                                                                \
  /* collectives */                                                                                 \
  X(MPI_Barrier, MpiBarrier, (MPI_Comm comm), (comm), Collective(c, comm, 0, nullptr, 1, -1), )     \
  X(MPI_Ibarrier, MpiIbarrier, (MPI_Comm comm, MPI_Request * request), (comm, request),             \
    Collective(c, comm, 0, nullptr, 1, -1), c.Pend(request, nullptr, false))                        \
  X(MPI_Bcast, MpiBcast, (void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm), \
    (buffer, count, datatype, root, comm), Collective(c, comm, count, datatype, 1, root), )         \
  X(MPI_Ibcast, MpiIbcast, (void* buffer, int count, MPI_Datatype datatype, int root,               \
                            MPI_Comm comm, MPI_Request* request),                                   \
    (buffer, count, datatype, root, comm, request), Collective(c, comm, count, datatype, 1, root),  \
    c.Pend(request, nullptr, false))                                                                \
  X(MPI_Reduce, MpiReduce, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,   \
                            MPI_Op op, int root, MPI_Comm comm),                                    \
    (sendbuf, recvbuf, count, datatype, op, root, comm),                                            \
    Collective(c, comm, count, datatype, 1, root); Reduction(c, op), )                              \
  X(MPI_Ireduce, MpiIreduce, (const void* sendbuf, void* recvbuf, int count,                        \
                              MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,            \
                              MPI_Request* request),                                                \
    (sendbuf, recvbuf, count, datatype, op, root, comm, request),                                   \
    Collective(c, comm, count, datatype, 1, root); Reduction(c, op),                                \
    c.Pend(request, nullptr, false))                                                                \
  X(MPI_Allreduce, MpiAllreduce, (const void* sendbuf, void* recvbuf, int count,                    \
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),                 \
    (sendbuf, recvbuf, count, datatype, op, comm),                                                  \
    Collective(c, comm, count, datatype, 1, -1); Reduction(c, op), )                                \
  X(MPI_Iallreduce, MpiIallreduce, (const void* sendbuf, void* recvbuf, int count,                  \
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,                \
                                    MPI_Request* request),                                          \
    (sendbuf, recvbuf, count, datatype, op, comm, request),                                         \
    Collective(c, comm, count, datatype, 1, -1); Reduction(c, op), c.Pend(request, nullptr, false)) \
  X(MPI_Scan, MpiScan, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,       \
                        MPI_Op op, MPI_Comm comm),                                                  \
    (sendbuf, recvbuf, count, datatype, op, comm),                                                  \
    Collective(c, comm, count, datatype, 1, -1); Reduction(c, op), )                                \
  X(MPI_Exscan, MpiExscan, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,   \
                            MPI_Op op, MPI_Comm comm),                                              \
    (sendbuf, recvbuf, count, datatype, op, comm),                                                  \
    Collective(c, comm, count, datatype, 1, -1); Reduction(c, op), )                                \
  X(MPI_Gather, MpiGather, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,              \
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,          \
                            MPI_Comm comm),                                                         \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),                       \
    Rooted(c, comm, root, sendbuf, sendcount, sendtype, recvcount, recvtype), )                     \
  X(MPI_Scatter, MpiScatter, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,            \
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,        \
                              MPI_Comm comm),                                                       \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),                       \
    Rooted(c, comm, root, recvbuf, recvcount, recvtype, sendcount, sendtype), )                     \
  X(MPI_Gatherv, MpiGatherv, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,            \
                              void* recvbuf, const int recvcounts[], const int displs[],            \
                              MPI_Datatype recvtype, int root, MPI_Comm comm),                      \
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),              \
    Gatherv(c, comm, root, sendbuf, sendcount, sendtype, recvcounts, recvtype), )                   \
  X(MPI_Scatterv, MpiScatterv, (const void* sendbuf, const int sendcounts[], const int displs[],     \
                                MPI_Datatype sendtype, void* recvbuf, int recvcount,                \
                                MPI_Datatype recvtype, int root, MPI_Comm comm),                    \
    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),              \
    Scatterv(c, comm, root, sendcounts, sendtype, recvbuf, recvcount, recvtype), )                  \
  X(MPI_Allgather, MpiAllgather, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,        \
                                  void* recvbuf, int recvcount, MPI_Datatype recvtype,              \
                                  MPI_Comm comm),                                                   \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                             \
    Rooted(c, comm, -1, sendbuf, sendcount, sendtype, recvcount, recvtype), )                       \
  X(MPI_Iallgather, MpiIallgather, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,      \
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype,            \
                                    MPI_Comm comm, MPI_Request* request),                           \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),                    \
    Rooted(c, comm, -1, sendbuf, sendcount, sendtype, recvcount, recvtype),                         \
    c.Pend(request, nullptr, false))                                                                \
  X(MPI_Allgatherv, MpiAllgatherv, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,      \
                                    void* recvbuf, const int recvcounts[], const int displs[],      \
                                    MPI_Datatype recvtype, MPI_Comm comm),                          \
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),                    \
    Gatherv(c, comm, -1, sendbuf, sendcount, sendtype, recvcounts, recvtype), )                     \
  X(MPI_Alltoall, MpiAlltoall, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,          \
                                void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm), \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),                             \
    Rooted(c, comm, -1, sendbuf, sendcount, sendtype, recvcount, recvtype), )                       \
  X(MPI_Ialltoall, MpiIalltoall, (const void* sendbuf, int sendcount, MPI_Datatype sendtype,        \
                                  void* recvbuf, int recvcount, MPI_Datatype recvtype,              \
                                  MPI_Comm comm, MPI_Request* request),                             \
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),                    \
    Rooted(c, comm, -1, sendbuf, sendcount, sendtype, recvcount, recvtype),                         \
    c.Pend(request, nullptr, false))                                                                \
  X(MPI_Alltoallv, MpiAlltoallv,                                                                    \
    (const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,       \
     void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,             \
     MPI_Comm comm),                                                                                \
    (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm),         \
    Alltoallv(c, comm, sendbuf, sendcounts, &sendtype, recvcounts, &recvtype, false), )             \
  X(MPI_Alltoallw, MpiAlltoallw,                                                                    \
    (const void* sendbuf, const int sendcounts[], const int sdispls[],                              \
     const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const int rdispls[],    \
     const MPI_Datatype recvtypes[], MPI_Comm comm),                                                \
    (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm),       \
    Alltoallv(c, comm, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes, true), )              \
  X(MPI_Reduce_scatter, MpiReduceScatter,                                                           \
    (const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,  \
     MPI_Comm comm),                                                                                \
    (sendbuf, recvbuf, recvcounts, datatype, op, comm),                                             \
    ReduceScatter(c, comm, recvcounts, 0, datatype); Reduction(c, op), )                            \
  X(MPI_Ireduce_scatter, MpiIreduceScatter,                                                         \
    (const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,  \
     MPI_Comm comm, MPI_Request* request),                                                          \
    (sendbuf, recvbuf, recvcounts, datatype, op, comm, request),                                    \
    ReduceScatter(c, comm, recvcounts, 0, datatype); Reduction(c, op),                              \
    c.Pend(request, nullptr, false))                                                                \
  X(MPI_Reduce_scatter_block, MpiReduceScatterBlock,                                                \
    (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,           \
     MPI_Comm comm),                                                                                \
    (sendbuf, recvbuf, recvcount, datatype, op, comm),                                              \
    ReduceScatter(c, comm, nullptr, recvcount, datatype); Reduction(c, op), )                       \
  X(MPI_Ireduce_scatter_block, MpiIreduceScatterBlock,                                              \
    (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,           \
     MPI_Comm comm, MPI_Request* request),                                                          \
    (sendbuf, recvbuf, recvcount, datatype, op, comm, request),                                     \
    ReduceScatter(c, comm, nullptr, recvcount, datatype); Reduction(c, op),                         \
    c.Pend(request, nullptr, false))
