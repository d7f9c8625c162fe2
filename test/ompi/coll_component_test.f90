! The Fortran side of the component test: Open MPI's Fortran bindings call the C PMPI layer
! directly, so only a coll component (not a PMPI wrapper) sees these calls.  Checks every
! result against values computed here and prints "rank case digest" lines like the C test.
program coll_component_test
  use mpi
  implicit none
  integer :: ierr, rank, nranks, wrong, cases, i, r, n, root, req, total_size
  integer :: mine(2), total(2)
  integer, parameter :: counts(4) = (/ 1, 7, 1023, 65537 /)
  integer :: c
  integer, allocatable :: isend(:), irecv(:), rcounts(:), displs(:)
  double precision, allocatable :: dsend(:), drecv(:)
  logical :: ok
  character(len=64) :: label

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
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
    call MPI_Allreduce(isend, irecv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-allreduce-integer-sum-', n
    call check(label, ok, irecv)
    call MPI_Allreduce(dsend, drecv, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    ok = .true.
    do i = 1, n
      ! bit for bit: the maximum is one of the inputs, exactly
      ok = ok .and. transfer(drecv(i), 0_8) == &
           transfer(maxval((/ (dble(mod(r * 5 + i, 13)), r = 0, nranks - 1) /)), 0_8)
    end do
    write(label, '(a,i0)') 'f-allreduce-double-max-', n
    call check(label, ok, int(drecv))
    irecv = isend
    call MPI_Allreduce(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-allreduce-integer-sum-inplace-', n
    call check(label, ok, irecv)

    ! reduce to the last rank, bcast from it
    root = nranks - 1
    call MPI_Reduce(isend, irecv, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
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
    call MPI_Bcast(irecv, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    ok = all(irecv == (/ (i * 3 + root, i = 1, n) /))
    write(label, '(a,i0)') 'f-bcast-integer-', n
    call check(label, ok, irecv)

    ! scan (a prefix sum) and iallreduce completed by MPI_Wait
    call MPI_Scan(isend, irecv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r * 7 + i * 3, 11) - 5, r = 0, rank) /))
    end do
    write(label, '(a,i0)') 'f-scan-integer-sum-', n
    call check(label, ok, irecv)
    irecv = 0
    call MPI_Iallreduce(isend, irecv, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
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
    call MPI_Allgather(isend, n, MPI_INTEGER, irecv, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    ok = .true.
    do r = 0, nranks - 1
      ok = ok .and. all(irecv(r * n + 1:r * n + n) == (/ (r * 100000 + i, i = 1, n) /))
    end do
    write(label, '(a,i0)') 'f-allgather-integer-', n
    call check(label, ok, irecv)
    do i = 1, n * nranks
      isend(i) = mod(rank + i, 5)
    end do
    call MPI_Reduce_scatter_block(isend, irecv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    ok = .true.
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r + rank * n + i, 5), r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-reduce_scatter_block-integer-', n
    call check(label, ok, irecv(1:n))
    ! in place: the result in the first n elements, every other one as it was
    irecv = isend
    call MPI_Reduce_scatter_block(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                  ierr)
    ok = all(irecv(n + 1:) == isend(n + 1:))
    do i = 1, n
      ok = ok .and. irecv(i) == sum((/ (mod(r + rank * n + i, 5), r = 0, nranks - 1) /))
    end do
    write(label, '(a,i0)') 'f-reduce_scatter_block-integer-inplace-', n
    call check(label, ok, irecv)
    do i = 1, n * nranks
      isend(i) = rank * 1000000 + i
    end do
    call MPI_Alltoall(isend, n, MPI_INTEGER, irecv, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
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
    call MPI_Gather(isend, n, MPI_INTEGER, irecv, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
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
    call MPI_Scatter(isend, n, MPI_INTEGER, irecv, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
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
    call MPI_Allgatherv(isend, rcounts(rank + 1), MPI_INTEGER, irecv, rcounts, displs, &
                        MPI_INTEGER, MPI_COMM_WORLD, ierr)
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
  call MPI_Allreduce(mine, total, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
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
end program coll_component_test
