// SPDX-License-Identifier: GPL-2.0-only
// Weak references to everything the wrappers take from libmpi, so that the
// library loads into processes that have no MPI (mpirun, shells, Python):
// there the references resolve to null and the recorder never touches them.
// Include after <mpi.h>; the build checks the result.
#pragma once

// The PMPI function of every wrapper (generated from tables/mpi.py).
#include "mpi_weak.inc"

// PMPI calls the recorder makes besides the intercepted ones.
#pragma weak PMPI_Comm_size
#pragma weak PMPI_Comm_rank
#pragma weak PMPI_Comm_group
#pragma weak PMPI_Group_translate_ranks
#pragma weak PMPI_Group_free
#pragma weak PMPI_Type_size
#pragma weak PMPI_Get_count
#pragma weak PMPI_Get_library_version
#pragma weak PMPI_Group_size
#pragma weak PMPI_Group_rank
#pragma weak PMPI_Comm_test_inter
#pragma weak PMPI_Comm_remote_group
#pragma weak PMPI_Topo_test
#pragma weak PMPI_Cartdim_get
#pragma weak PMPI_Cart_shift
#pragma weak PMPI_Graph_neighbors_count
#pragma weak PMPI_Graph_neighbors
#pragma weak PMPI_Dist_graph_neighbors_count
#pragma weak PMPI_Dist_graph_neighbors
#pragma weak PMPI_Win_get_group
// Fortran handles and statuses, as the Fortran wrappers read them.
#pragma weak PMPI_Comm_f2c
#pragma weak PMPI_Type_f2c
#pragma weak PMPI_Op_f2c
#pragma weak PMPI_Info_f2c
#pragma weak PMPI_Group_f2c
#pragma weak PMPI_Request_f2c
#pragma weak PMPI_Win_f2c
#pragma weak PMPI_Message_f2c
#pragma weak PMPI_Status_f2c
#pragma weak MPI_F_STATUS_IGNORE
#pragma weak MPI_F_STATUSES_IGNORE

#ifdef OPEN_MPI
// Open MPI's predefined handles are addresses of these objects.
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_comm_self
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_group_null
#pragma weak ompi_request_null
#pragma weak ompi_mpi_win_null
#pragma weak ompi_message_null
#pragma weak ompi_message_no_proc
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_mpi_byte
#pragma weak ompi_mpi_packed
#pragma weak ompi_mpi_char
#pragma weak ompi_mpi_signed_char
#pragma weak ompi_mpi_unsigned_char
#pragma weak ompi_mpi_short
#pragma weak ompi_mpi_unsigned_short
#pragma weak ompi_mpi_int
#pragma weak ompi_mpi_unsigned
#pragma weak ompi_mpi_long
#pragma weak ompi_mpi_unsigned_long
#pragma weak ompi_mpi_long_long_int
#pragma weak ompi_mpi_unsigned_long_long
#pragma weak ompi_mpi_float
#pragma weak ompi_mpi_double
#pragma weak ompi_mpi_long_double
#pragma weak ompi_mpi_int8_t
#pragma weak ompi_mpi_uint8_t
#pragma weak ompi_mpi_int16_t
#pragma weak ompi_mpi_uint16_t
#pragma weak ompi_mpi_int32_t
#pragma weak ompi_mpi_uint32_t
#pragma weak ompi_mpi_int64_t
#pragma weak ompi_mpi_uint64_t
#pragma weak ompi_mpi_c_float_complex
#pragma weak ompi_mpi_c_double_complex
#pragma weak ompi_mpi_2int
#pragma weak ompi_mpi_float_int
#pragma weak ompi_mpi_double_int
#pragma weak ompi_mpi_long_int
#pragma weak ompi_mpi_real
#pragma weak ompi_mpi_real4
#pragma weak ompi_mpi_real8
#pragma weak ompi_mpi_dblprec
#pragma weak ompi_mpi_integer
#pragma weak ompi_mpi_integer1
#pragma weak ompi_mpi_integer2
#pragma weak ompi_mpi_integer4
#pragma weak ompi_mpi_integer8
#pragma weak ompi_mpi_character
#pragma weak ompi_mpi_cplex
#pragma weak ompi_mpi_dblcplex
#pragma weak ompi_mpi_2integer
#pragma weak ompi_mpi_2real
#pragma weak ompi_mpi_2dblprec
#pragma weak ompi_mpi_op_sum
#pragma weak ompi_mpi_op_prod
#pragma weak ompi_mpi_op_max
#pragma weak ompi_mpi_op_min
#pragma weak ompi_mpi_op_land
#pragma weak ompi_mpi_op_lor
#pragma weak ompi_mpi_op_lxor
#pragma weak ompi_mpi_op_band
#pragma weak ompi_mpi_op_bor
#pragma weak ompi_mpi_op_bxor
#pragma weak ompi_mpi_op_maxloc
#pragma weak ompi_mpi_op_minloc
#pragma weak ompi_mpi_op_replace
#endif
