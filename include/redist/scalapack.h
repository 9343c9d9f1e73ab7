/* libredist_scalapack: ScaLAPACK's p?gemr2d, p?trmr2d and PBLAS's p?tran as drop-ins (docs/scalapack.md).
 *
 * Link -lredist_scalapack before ScaLAPACK (or LD_PRELOAD=libredist_scalapack.so)
 * and the program's pdgemr2d_ / Cpdgemr2d / pdtran_ calls run on redist, with ScaLAPACK's
 * exact argument semantics. REDIST_SCALAPACK=native in the environment (or
 * redist_scalapack_set_native(1)) forwards every call to the routine of the same
 * name found next in link order, the real ScaLAPACK.
 *
 * The declarations below are ScaLAPACK's own (it ships no header); complex
 * arrays are passed as void*. C99, no C++ types. */
#ifndef REDIST_SCALAPACK_H
#define REDIST_SCALAPACK_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1: forward every call to the next ScaLAPACK in link order; 0: redist (the
 * default, unless REDIST_SCALAPACK=native was set when the first call was made).
 * Call it on every process of a union context alike, between calls. */
void redist_scalapack_set_native(int native);
int redist_scalapack_native(void);
/* Plans kept per process (a repeated call with the same descriptors plans once). */
int redist_scalapack_cached_plans(void);
/* Frees every kept plan (the communicators made for union contexts stay, as a
 * program's contexts do): the next call with any descriptors plans again, as a
 * first call. Call it on every process alike, between calls: the next call on a
 * union context whose processes freed unalike stops the program with a message. */
void redist_scalapack_free_plans(void);

/* Fortran entry points (all arguments by reference). */
void psgemr2d_(const int* m, const int* n, const float* a, const int* ia, const int* ja, const int* desca,
               float* b, const int* ib, const int* jb, const int* descb, const int* ictxt);
void pdgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca,
               double* b, const int* ib, const int* jb, const int* descb, const int* ictxt);
void pcgemr2d_(const int* m, const int* n, const void* a, const int* ia, const int* ja, const int* desca,
               void* b, const int* ib, const int* jb, const int* descb, const int* ictxt);
void pzgemr2d_(const int* m, const int* n, const void* a, const int* ia, const int* ja, const int* desca,
               void* b, const int* ib, const int* jb, const int* descb, const int* ictxt);
void pigemr2d_(const int* m, const int* n, const int* a, const int* ia, const int* ja, const int* desca,
               int* b, const int* ib, const int* jb, const int* descb, const int* ictxt);

/* C entry points (ScaLAPACK's REDIST C interface). */
void Cpsgemr2d(int m, int n, float* a, int ia, int ja, int* desca, float* b, int ib, int jb, int* descb,
               int gcontext);
void Cpdgemr2d(int m, int n, double* a, int ia, int ja, int* desca, double* b, int ib, int jb, int* descb,
               int gcontext);
void Cpcgemr2d(int m, int n, void* a, int ia, int ja, int* desca, void* b, int ib, int jb, int* descb,
               int gcontext);
void Cpzgemr2d(int m, int n, void* a, int ia, int ja, int* desca, void* b, int ib, int jb, int* descb,
               int gcontext);
void Cpigemr2d(int m, int n, int* a, int ia, int ja, int* desca, int* b, int ib, int jb, int* descb,
               int gcontext);

/* ScaLAPACK's p?trmr2d: the upper (uplo 'U') or lower ('L') trapezoid of the m x n
 * submatrix A(ia:, ja:) into B(ib:, jb:), with its diagonal (diag 'N') or without
 * ('U', unit); the rest of B is left as it is. uplo and diag are read as
 * ScaLAPACK reads them (one character, either case). Fortran entry points: */
void pstrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const float* a, const int* ia,
               const int* ja, const int* desca, float* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pdtrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const double* a, const int* ia,
               const int* ja, const int* desca, double* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pctrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const void* a, const int* ia,
               const int* ja, const int* desca, void* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pztrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const void* a, const int* ia,
               const int* ja, const int* desca, void* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
void pitrmr2d_(const char* uplo, const char* diag, const int* m, const int* n, const int* a, const int* ia,
               const int* ja, const int* desca, int* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);
/* C entry points (ScaLAPACK's: uplo and diag as pointers to one character). */
void Cpstrmr2d(char* uplo, char* diag, int m, int n, float* a, int ia, int ja, int* desca, float* b, int ib, int jb,
               int* descb, int gcontext);
void Cpdtrmr2d(char* uplo, char* diag, int m, int n, double* a, int ia, int ja, int* desca, double* b, int ib,
               int jb, int* descb, int gcontext);
void Cpctrmr2d(char* uplo, char* diag, int m, int n, void* a, int ia, int ja, int* desca, void* b, int ib, int jb,
               int* descb, int gcontext);
void Cpztrmr2d(char* uplo, char* diag, int m, int n, void* a, int ia, int ja, int* desca, void* b, int ib, int jb,
               int* descb, int gcontext);
void Cpitrmr2d(char* uplo, char* diag, int m, int n, int* a, int ia, int ja, int* desca, int* b, int ib, int jb,
               int* descb, int gcontext);

/* PBLAS's p?tran (Fortran entry points, PBLAS has no others):
 * sub(C) := beta * sub(C) + alpha * op(sub(A)), sub(C) = C(ic:ic+m-1, jc:jc+n-1),
 * sub(A) = A(ia:ia+n-1, ja:ja+m-1), op(A) = A^T (p?tran, p?tranu) or A^H
 * (p?tranc); A and C in one BLACS context. alpha and beta: one real, or a
 * complex number as two (real, imaginary). beta = 0: C is not read. */
void pstran_(const int* m, const int* n, const float* alpha, const void* a, const int* ia, const int* ja,
             const int* desca, const float* beta, void* c, const int* ic, const int* jc, const int* descc);
void pdtran_(const int* m, const int* n, const double* alpha, const void* a, const int* ia, const int* ja,
             const int* desca, const double* beta, void* c, const int* ic, const int* jc, const int* descc);
void pctranu_(const int* m, const int* n, const float* alpha, const void* a, const int* ia, const int* ja,
              const int* desca, const float* beta, void* c, const int* ic, const int* jc, const int* descc);
void pctranc_(const int* m, const int* n, const float* alpha, const void* a, const int* ia, const int* ja,
              const int* desca, const float* beta, void* c, const int* ic, const int* jc, const int* descc);
void pztranu_(const int* m, const int* n, const double* alpha, const void* a, const int* ia, const int* ja,
              const int* desca, const double* beta, void* c, const int* ic, const int* jc, const int* descc);
void pztranc_(const int* m, const int* n, const double* alpha, const void* a, const int* ia, const int* ja,
              const int* desca, const double* beta, void* c, const int* ic, const int* jc, const int* descc);

#ifdef __cplusplus
}
#endif

#endif /* REDIST_SCALAPACK_H */
