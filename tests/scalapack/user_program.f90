! A Fortran program as a user writes it (ScaLAPACK's Fortran interface: BLACS
! grids, DESCINIT, NUMROC, INDXL2G, PDGEMR2D, PDTRMR2D, PDTRAN), linked as a user links it:
! -lredist_scalapack before ScaLAPACK. A (37 x 29, blocks 4 x 3, an LLD above its
! local rows) on a P x 1 grid; B(1:20, 2:29) := A(5:24, 1:28) onto a 1 x P grid
! with blocks 5 x 7; then only the upper trapezoid of that submatrix (PDTRMR2D,
! 'U', 'N': i <= j inside it) into a B of -1; C := 2 A^T + 0.5 C on A's grid (PBLAS: one context). Every
! element each process holds is checked (exact: integers in doubles); the error
! count is summed over all processes and a wrong element fails the program.
program user_program_f
  implicit none
  integer, parameter :: m = 37, n = 29, mb_a = 4, nb_a = 3, mb_b = 5, nb_b = 7
  integer :: me, np, ictxt_a, ictxt_b, line, pr, pc, myr, myc, info
  integer :: desca(9), descb(9), descc(9), lda, ldb, ldc, nra, nca, nrb, ncb, nrc, ncc
  integer :: i, j, gi, gj, nerr(1)
  double precision, allocatable :: a(:, :), b(:, :), c(:, :)
  double precision :: want
  integer, external :: numroc, indxl2g

  call blacs_pinfo(me, np)
  call blacs_get(0, 0, ictxt_a)
  call blacs_gridinit(ictxt_a, 'C', np, 1)
  call blacs_get(0, 0, ictxt_b)
  call blacs_gridinit(ictxt_b, 'R', 1, np)
  call blacs_get(0, 0, line)
  call blacs_gridinit(line, 'R', 1, np)
  nerr(1) = 0

  ! A on the P x 1 grid: a(i, j) = i + 1000 j (global, 1-based)
  call blacs_gridinfo(ictxt_a, pr, pc, myr, myc)
  nra = numroc(m, mb_a, myr, 0, pr)
  nca = numroc(n, nb_a, myc, 0, pc)
  lda = max(1, nra) + 2
  allocate (a(lda, max(1, nca)))
  a = -7d0
  call descinit(desca, m, n, mb_a, nb_a, 0, 0, ictxt_a, lda, info)
  do j = 1, nca
    do i = 1, nra
      a(i, j) = indxl2g(i, mb_a, myr, 0, pr) + 1000d0 * indxl2g(j, nb_a, myc, 0, pc)
    end do
  end do

  ! B on the 1 x P grid, B(1:20, 2:29) := A(5:24, 1:28), the rest stays -1
  call blacs_gridinfo(ictxt_b, pr, pc, myr, myc)
  nrb = numroc(m, mb_b, myr, 0, pr)
  ncb = numroc(n, nb_b, myc, 0, pc)
  ldb = max(1, nrb)
  allocate (b(ldb, max(1, ncb)))
  b = -1d0
  call descinit(descb, m, n, mb_b, nb_b, 0, 0, ictxt_b, ldb, info)
  call pdgemr2d(20, n - 1, a, 5, 1, desca, b, 1, 2, descb, line)
  do j = 1, ncb
    do i = 1, nrb
      gi = indxl2g(i, mb_b, myr, 0, pr)
      gj = indxl2g(j, nb_b, myc, 0, pc)
      want = -1d0
      if (gi <= 20 .and. gj >= 2) want = (gi + 4) + 1000d0 * (gj - 1)
      if (b(i, j) /= want) nerr(1) = nerr(1) + 1
    end do
  end do

  ! The upper trapezoid (20 x 28, wider than tall: i <= j from the top left corner)
  b = -1d0
  call pdtrmr2d('U', 'N', 20, n - 1, a, 5, 1, desca, b, 1, 2, descb, line)
  do j = 1, ncb
    do i = 1, nrb
      gi = indxl2g(i, mb_b, myr, 0, pr)
      gj = indxl2g(j, nb_b, myc, 0, pc)
      want = -1d0
      if (gi <= 20 .and. gj >= 2 .and. gi - 1 <= gj - 2) want = (gi + 4) + 1000d0 * (gj - 1)
      if (b(i, j) /= want) nerr(1) = nerr(1) + 1
    end do
  end do

  ! C (29 x 37) on A's grid: C := 2 A^T + 0.5 C, C was 1
  call blacs_gridinfo(ictxt_a, pr, pc, myr, myc)
  nrc = numroc(n, mb_a, myr, 0, pr)
  ncc = numroc(m, nb_a, myc, 0, pc)
  ldc = max(1, nrc)
  allocate (c(ldc, max(1, ncc)))
  c = 1d0
  call descinit(descc, n, m, mb_a, nb_a, 0, 0, ictxt_a, ldc, info)
  call pdtran(n, m, 2d0, a, 1, 1, desca, 0.5d0, c, 1, 1, descc)
  do j = 1, ncc
    do i = 1, nrc
      gi = indxl2g(i, mb_a, myr, 0, pr)
      gj = indxl2g(j, nb_a, myc, 0, pc)
      want = 2d0 * (gj + 1000d0 * gi) + 0.5d0
      if (c(i, j) /= want) nerr(1) = nerr(1) + 1
    end do
  end do

  call igsum2d(line, 'All', ' ', 1, 1, nerr, 1, -1, -1)
  if (me == 0) then
    if (nerr(1) == 0) then
      print '(a, i0, a)', 'user_program_f: pdgemr2d, pdtrmr2d and pdtran on ', np, ' processes: every element right'
    else
      print '(a, i0, a)', 'user_program_f: ', nerr(1), ' wrong elements'
    end if
  end if
  call blacs_gridexit(ictxt_a)
  call blacs_gridexit(ictxt_b)
  call blacs_gridexit(line)
  call blacs_exit(0)
  if (nerr(1) /= 0) error stop 1
end program user_program_f
