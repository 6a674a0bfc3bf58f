#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>
#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  // [[4, 12, -16], [12, 37, -43], [-16, -43, 98]] = L L^T, L = [[2, 0, 0], [6, 1, 0], [-8, 5, 3]].
  Kokkos::View<double**, Kokkos::LayoutLeft> a("A", 3, 3);
  auto h = Kokkos::create_mirror_view(a);
  const double v[3][3] = {{4, 12, -16}, {12, 37, -43}, {-16, -43, 98}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) h(i, j) = v[i][j];
  Kokkos::deep_copy(a, h);
  const int info = kolesky::potrf(Kokkos::DefaultExecutionSpace(), kolesky::Uplo::Lower, a);
  Kokkos::deep_copy(h, a);
  const bool ok = info == 0 && h(0, 0) == 2 && h(1, 0) == 6 && h(2, 0) == -8 && h(1, 1) == 1 &&
                  h(2, 1) == 5 && h(2, 2) == 3;
  std::printf("installed Kolesky %s: potrf info = %d, factor %s\n", KOLESKY_VERSION, info,
              ok ? "correct" : "WRONG");
  return ok ? 0 : 1;
}
