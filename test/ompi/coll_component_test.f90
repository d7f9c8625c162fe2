! The Fortran side of the component test: Open MPI's Fortran bindings call the C PMPI layer
! directly, so only a coll component (not a PMPI wrapper) sees these calls.  Checks every
! result against values computed here and prints "rank case digest" lines like the C test.
! COLL_TEST_MEMORY=device (or mixed: odd ranks only) gives the calls CUDA device memory, as in
! the C test (coll_component_device.c): the arrays stay in host memory, where they are filled
! and checked; each call gets views of device copies uploaded before it and downloaded after.
program coll_component_test
  use mpi
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_ptr, c_loc, c_f_pointer
  implicit none
  interface
    ! coll_component_device.c
    subroutine devmem_init(world_rank) bind(C, name='devmem_init')
      import :: c_int
      integer(c_int), value :: world_rank
    end subroutine devmem_init
    type(c_ptr) function devmem_up(host, bytes) bind(C, name='devmem_up')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: host
      integer(c_size_t), value :: bytes
    end function devmem_up
    subroutine devmem_down(host, device, bytes) bind(C, name='devmem_down')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: host, device
      integer(c_size_t), value :: bytes
    end subroutine devmem_down
  end interface
  integer :: ierr, rank, nranks, wrong, cases, i, r, n, root, req, total_size
  integer, target :: mine(2), total(2)
  integer, parameter :: counts(4) = (/ 1, 7, 1023, 65537 /)
  integer :: c
  integer, allocatable :: rcounts(:), displs(:)
  integer, allocatable, target :: isend(:), irecv(:)
  double precision, allocatable, target :: dsend(:), drecv(:)
  ! What MPI_COMM_WORLD's call gets for each array (up_i, up_d): contiguous, so that passing
  ! them to MPI copies nothing in or out through the CPU, which device memory would not allow.
  integer, pointer, contiguous :: isend_w(:), irecv_w(:), mine_w(:), total_w(:)
  double precision, pointer, contiguous :: dsend_w(:), drecv_w(:)
  logical :: ok
  character(len=64) :: label

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call devmem_init(int(rank, c_int))
  wrong = 0
  cases = 0
  allocate(rcounts(nranks), displs(nranks))

  do c = 1, size(counts)
    n = counts(c)
    ! allreduce: INTEGER sum, DOUBLE PRECISION max, and INTEGER sum in place
    allocate(isend(n), irecv(n), dsend(n), drecv(n))
    do i = 1, n
      isend(i) = mod(rank * 7 + i * 3, 11) - 5
      dsend(i) = dble(mod(rank * 5 + i, 13))
    end do
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Allreduce(isend_w, irecv_w, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-allreduce-integer-sum-', n
    call check(label, ok, irecv)
    call up_d(dsend, dsend_w); call up_d(drecv, drecv_w)
    call MPI_Allreduce(dsend_w, drecv_w, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    call down_d(dsend, dsend_w); call down_d(drecv, drecv_w)
    ok = .true.
    do i = 1, n
      ! bit for bit: the maximum is one of the inputs, exactly
      ok = ok .and. transfer(drecv(i), 0_8) == &
           transfer(maxval((/ (dble(mod(r * 5 + i, 13)), r = 0, nranks - 1) /)), 0_8)
    end do
    write(label, '(a,i0)') 'f-allreduce-double-max-', n
    call check(label, ok, int(drecv))
    irecv = isend
    call up_i(irecv, irecv_w)
    call MPI_Allreduce(MPI_IN_PLACE, irecv_w, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call down_i(irecv, irecv_w)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-allreduce-integer-sum-inplace-', n
    call check(label, ok, irecv)

    ! reduce to the last rank, bcast from it
    root = nranks - 1
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Reduce(isend_w, irecv_w, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    if (rank == root) then
      do i = 1, n
        ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
      end do
    end if
    write(label, '(a,i0)') 'f-reduce-integer-sum-', n
    call check(label, ok, irecv(1:merge(n, 0, rank == root)))
    if (rank == root) then
      do i = 1, n
        irecv(i) = i * 3 + root
      end do
    else
      irecv = -1
    end if
    call up_i(irecv, irecv_w)
    call MPI_Bcast(irecv_w, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call down_i(irecv, irecv_w)
    ok = all(irecv == (/ (i * 3 + root, i = 1, n) /))
    write(label, '(a,i0)') 'f-bcast-integer-', n
    call check(label, ok, irecv)

    ! scan (a prefix sum) and iallreduce completed by MPI_Wait
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Scan(isend_w, irecv_w, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, rank) /))
    end do
    write(label, '(a,i0)') 'f-scan-integer-sum-', n
    call check(label, ok, irecv)
    irecv = 0
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Iallreduce(isend_w, irecv_w, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == maxval((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-iallreduce-integer-max-', n
    call check(label, ok, irecv)
    deallocate(isend, irecv, dsend, drecv)

    ! allgather, reduce_scatter_block, alltoall on INTEGER
    allocate(isend(n * nranks), irecv(n * nranks))
    do i = 1, n
      isend(i) = rank * 100000 + i
    end do
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Allgather(isend_w, n, MPI_INTEGER, irecv_w, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do r = 0, nranks - 1
      ok = ok .and. all(irecv(r * n + 1:r * n + n) == (/ (r * 100000 + i, i = 1, n) /))
    end do
    write(label, '(a,i0)') 'f-allgather-integer-', n
    call check(label, ok, irecv)
    do i = 1, n * nranks
      isend(i) = mod(rank + i, 5)
    end do
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Reduce_scatter_block(isend_w, irecv_w, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r + rank * n + i, 5), r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-reduce_scatter_block-integer-', n
    call check(label, ok, irecv(1:n))
    ! in place: the result in the first n elements, every other one as it was
    irecv = isend
    call up_i(irecv, irecv_w)
    call MPI_Reduce_scatter_block(MPI_IN_PLACE, irecv_w, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                  ierr)
    call down_i(irecv, irecv_w)
    ok = all(irecv(n + 1:) == isend(n + 1:))
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r + rank * n + i, 5), r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-reduce_scatter_block-integer-inplace-', n
    call check(label, ok, irecv)
    do i = 1, n * nranks
      isend(i) = rank * 1000000 + i
    end do
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Alltoall(isend_w, n, MPI_INTEGER, irecv_w, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do r = 0, nranks - 1
      ok = ok .and. all(irecv(r * n + 1:r * n + n) == (/ (r * 1000000 + rank * n + i, i = 1, n) /))
    end do
    write(label, '(a,i0)') 'f-alltoall-integer-', n
    call check(label, ok, irecv)

    ! gather to rank 0, scatter from the last rank
    do i = 1, n
      isend(i) = rank * 100000 + i
    end do
    irecv = -1
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Gather(isend_w, n, MPI_INTEGER, irecv_w, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do r = 0, nranks - 1
      if (rank == 0) ok = ok .and. all(irecv(r * n + 1:r * n + n) == (/ (r * 100000 + i, i = 1, n) /))
    end do
    if (rank /= 0) ok = all(irecv == -1)
    write(label, '(a,i0)') 'f-gather-integer-root0-', n
    call check(label, ok, irecv)
    root = nranks - 1
    do i = 1, n * nranks
      isend(i) = merge(i + 7, -2, rank == root)
    end do
    irecv = -1
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Scatter(isend_w, n, MPI_INTEGER, irecv_w, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = all(irecv(1:n) == (/ (rank * n + i + 7, i = 1, n) /)) .and. all(irecv(n + 1:) == -1)
    write(label, '(a,i0)') 'f-scatter-integer-', n
    call check(label, ok, irecv)
    deallocate(isend, irecv)

    ! allgatherv: some ranks send nothing; blocks in reverse rank order with a gap before each
    total_size = 0
    do r = nranks - 1, 0, -1
      rcounts(r + 1) = merge(0, n + r, mod(r, 3) == 1)
      displs(r + 1) = total_size + 1
      total_size = total_size + 1 + rcounts(r + 1)
    end do
    allocate(isend(max(rcounts(rank + 1), 1)), irecv(total_size))
    do i = 1, rcounts(rank + 1)
      isend(i) = rank * 100000 + i
    end do
    irecv = -1
    call up_i(isend, isend_w); call up_i(irecv, irecv_w)
    call MPI_Allgatherv(isend_w, rcounts(rank + 1), MPI_INTEGER, irecv_w, rcounts, displs, &
                        MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call down_i(isend, isend_w); call down_i(irecv, irecv_w)
    ok = .true.
    do r = 0, nranks - 1
      ok = ok .and. irecv(displs(r + 1)) == -1 .and. &
           all(irecv(displs(r + 1) + 1:displs(r + 1) + rcounts(r + 1)) == &
               (/ (r * 100000 + i, i = 1, rcounts(r + 1)) /))
    end do
    write(label, '(a,i0)') 'f-allgatherv-integer-', n
    call check(label, ok, irecv)
    deallocate(isend, irecv)
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call check('f-barrier', ierr == MPI_SUCCESS, (/ ierr /))

  mine = (/ wrong, cases /)
  call up_i(mine, mine_w); call up_i(total, total_w)
  call MPI_Allreduce(mine_w, total_w, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call down_i(mine, mine_w); call down_i(total, total_w)
  if (rank == 0) write(*, '(a,i0,a,i0,a,i0,a)') 'summary: ', total(1), ' wrong on ', nranks, &
    ' ranks, ', total(2), ' cases'
  call MPI_Finalize(ierr)
  if (total(1) /= 0) call exit(1)

contains

  ! Prints "rank label digest" (a sum of the values weighted by position) and counts failures.
  subroutine check(name, good, values)
    character(len=*), intent(in) :: name
    logical, intent(in) :: good
    integer, intent(in) :: values(:)
    integer(kind=8) :: h
    integer :: k
    h = 0
    do k = 1, size(values)
      h = mod(h * 31 + int(values(k), 8) + 7, 2305843009213693951_8)
    end do
    cases = cases + 1
    if (good) then
      write(*, '(i0,1x,a,1x,i0)') rank, trim(name), h
    else
      write(*, '(i0,1x,a,1x,i0,a)') rank, trim(name), h, ' WRONG'
      wrong = wrong + 1
    end if
  end subroutine check

  ! MPI_COMM_WORLD's copy of host for the next call: a view of a device copy where this rank's
  ! buffers are device memory, of host itself elsewhere.
  subroutine up_i(host, world)
    integer, intent(inout), target, contiguous :: host(:)
    integer, intent(out), pointer, contiguous :: world(:)
    call c_f_pointer(devmem_up(c_loc(host), bytes_i(host)), world, shape(host))
  end subroutine up_i

  ! After the call: what the device copy holds back into host, and the copy freed.
  subroutine down_i(host, world)
    integer, intent(inout), target, contiguous :: host(:)
    integer, intent(inout), pointer, contiguous :: world(:)
    call devmem_down(c_loc(host), c_loc(world), bytes_i(host))
    nullify(world)
  end subroutine down_i

  integer(c_size_t) function bytes_i(a)
    integer, intent(in) :: a(:)
    bytes_i = size(a, kind=c_size_t) * storage_size(a, c_size_t) / 8
  end function bytes_i

  ! up_i, down_i and bytes_i for DOUBLE PRECISION.
  subroutine up_d(host, world)
    double precision, intent(inout), target, contiguous :: host(:)
    double precision, intent(out), pointer, contiguous :: world(:)
    call c_f_pointer(devmem_up(c_loc(host), bytes_d(host)), world, shape(host))
  end subroutine up_d

  subroutine down_d(host, world)
    double precision, intent(inout), target, contiguous :: host(:)
    double precision, intent(inout), pointer, contiguous :: world(:)
    call devmem_down(c_loc(host), c_loc(world), bytes_d(host))
    nullify(world)
  end subroutine down_d

  integer(c_size_t) function bytes_d(a)
    double precision, intent(in) :: a(:)
    bytes_d = size(a, kind=c_size_t) * storage_size(a, c_size_t) / 8
  end function bytes_d
end program coll_component_test
