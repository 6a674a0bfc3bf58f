// Interior-point LP for open-pit mine planning (reference 001): a primal-dual Mehrotra
// predictor-corrector method whose every iteration factors the normal matrix
// M = A·Θx·Aᵀ + Θs with kolesky::potrf and solves with kolesky::potrs, on device Views.
//
//   03_interior_point_lp [--nx N --ny N --nz N] [--seed S] [--quiet] [--check-glpk] [--tol T]
//
// Stops when the relative primal and dual infeasibilities and the relative gap are all ≤ T
// (default 1e-8); a smaller T drives the end game further into ill-conditioning.
//
// The LP:  max cᵀx  s.t.  A x ≤ b,  0 ≤ x ≤ 1,  one x per block of an nx × ny × nz model.
//   rows  : precedence x_below − x_above ≤ 0 for the 5 blocks of the layer above (same column
//           and its 4 neighbours), then one capacity row Σ tonnage·x ≤ C (the last row);
//   bounds: x ≤ 1 is handled inside the IPM (x + w = 1, w ≥ 0), not as rows, so the normal
//           matrix has order m = #precedence rows + 1.
// With slacks s (A x + s = b) the method works on  min −cᵀx, A x + s = b, x + w = 1, x, w, s ≥ 0;
// dual: Aᵀy + z − v = −c, y + zs = 0, z, v, zs ≥ 0.
//
// --check-glpk solves the same LP with GLPK's simplex (when built with GLPK) and exits 1 if the
// objectives differ by more than 1e-6·max(1, |obj_glpk|). KOLESKY_LP_BREAK=1 in the environment
// perturbs the reported objective, so that a test can show that the check fails.
#include <Kokkos_Core.hpp>
#include <Kolesky.hpp>

#ifdef KOLESKY_EXAMPLE_HAVE_GLPK
#include <glpk.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace lpex {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Vec = Kokkos::View<double*, Mem>;
using IVec = Kokkos::View<int*, Mem>;
using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;

// ----------------------------------------------------------------------------------------------
// The instance (host)

// splitmix64: the same numbers on every platform (std:: distributions are not portable).
struct Rng {
  std::uint64_t s;
  double uniform() {
    s += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return double(z >> 11) * (1.0 / 9007199254740992.0);
  }
};

struct HostLP {
  int nx = 0, ny = 0, nz = 0, n = 0, m = 0;
  std::vector<int> rp, ci;  // CSR, columns ascending within a row
  std::vector<double> av;
  std::vector<int> cp, ri;  // CSC, rows ascending within a column
  std::vector<double> cv;
  std::vector<double> b, c, tonnage;
  double capacity = 0;
};

HostLP make_instance(const int nx, const int ny, const int nz, const std::uint64_t seed) {
  HostLP lp;
  lp.nx = nx;
  lp.ny = ny;
  lp.nz = nz;
  lp.n = nx * ny * nz;
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
  // One ore body, somewhere in the middle of the footprint, richer with depth: the optimum has to
  // strip waste above it, and the capacity makes it choose.
  const double cx = (0.25 + 0.5 * rng.uniform()) * (nx - 1);
  const double cy = (0.25 + 0.5 * rng.uniform()) * (ny - 1);
  const double r = 0.35 * std::max(nx, ny) + 1.0;
  const double price = 20.0, cost = 1.0;  // per unit of grade and per kt
  lp.c.resize(lp.n);
  lp.tonnage.resize(lp.n);
  double total = 0;
  for (int iz = 0; iz < nz; ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix) {
        const int id = (iz * ny + iy) * nx + ix;
        const double t = 0.8 + 0.4 * rng.uniform();  // kt
        const double d2 = ((ix - cx) * (ix - cx) + (iy - cy) * (iy - cy)) / (r * r);
        const double depth = (iz + 1.0) / nz;
        const double grade =
            0.1 * (0.4 + 1.2 * rng.uniform()) * std::exp(-d2) * (0.5 + depth) + 0.02 * rng.uniform();
        lp.tonnage[id] = t;
        lp.c[id] = t * (grade * price - cost);
        total += t;
      }
  lp.capacity = 0.25 * total;

  // Rows: precedence (2 nonzeros each), then the capacity row.
  const int off[5][2] = {{0, -1}, {-1, 0}, {0, 0}, {1, 0}, {0, 1}};
  lp.rp.push_back(0);
  for (int iz = 1; iz < nz; ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix) {
        const int below = (iz * ny + iy) * nx + ix;
        for (const auto& o : off) {
          const int jx = ix + o[0], jy = iy + o[1];
          if (jx < 0 || jx >= nx || jy < 0 || jy >= ny) continue;
          const int above = ((iz - 1) * ny + jy) * nx + jx;  // always < below
          lp.ci.push_back(above);
          lp.av.push_back(-1.0);
          lp.ci.push_back(below);
          lp.av.push_back(1.0);
          lp.rp.push_back(int(lp.ci.size()));
          lp.b.push_back(0.0);
        }
      }
  for (int j = 0; j < lp.n; ++j) {
    lp.ci.push_back(j);
    lp.av.push_back(lp.tonnage[j]);
  }
  lp.rp.push_back(int(lp.ci.size()));
  lp.b.push_back(lp.capacity);
  lp.m = int(lp.b.size());

  // CSC by counting; rows come out ascending because rows are visited in order.
  const int nnz = int(lp.ci.size());
  lp.cp.assign(lp.n + 1, 0);
  for (int p = 0; p < nnz; ++p) ++lp.cp[lp.ci[p] + 1];
  for (int j = 0; j < lp.n; ++j) lp.cp[j + 1] += lp.cp[j];
  lp.ri.resize(nnz);
  lp.cv.resize(nnz);
  std::vector<int> next(lp.cp.begin(), lp.cp.end() - 1);
  for (int i = 0; i < lp.m; ++i)
    for (int p = lp.rp[i]; p < lp.rp[i + 1]; ++p) {
      const int q = next[lp.ci[p]]++;
      lp.ri[q] = i;
      lp.cv[q] = lp.av[p];
    }
  return lp;
}

// ----------------------------------------------------------------------------------------------
// The instance and the IPM's vectors on the device

struct DeviceLP {
  int n = 0, m = 0;
  IVec rp, ci, cp, ri;
  Vec av, cv, b, c;
};

template <class T>
Kokkos::View<T*, Mem> to_device(const char* label, const std::vector<T>& h) {
  Kokkos::View<T*, Mem> d(std::string(label), h.size());
  auto hv = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < h.size(); ++i) hv(i) = h[i];
  Kokkos::deep_copy(d, hv);
  return d;
}

DeviceLP to_device(const HostLP& h) {
  DeviceLP d;
  d.n = h.n;
  d.m = h.m;
  d.rp = to_device("rp", h.rp);
  d.ci = to_device("ci", h.ci);
  d.av = to_device("av", h.av);
  d.cp = to_device("cp", h.cp);
  d.ri = to_device("ri", h.ri);
  d.cv = to_device("cv", h.cv);
  d.b = to_device("b", h.b);
  d.c = to_device("c", h.c);
  return d;
}

// A point or a direction: x, w, z, v have n entries (structural variables, their upper-bound
// slacks, the duals of x ≥ 0 and w ≥ 0); s, y, zs have m (row slacks, row duals, duals of s ≥ 0).
struct Point {
  Vec x, w, z, v, s, y, zs;
  Point(const char* tag, const int n, const int m)
      : x(std::string(tag) + "x", n), w(std::string(tag) + "w", n), z(std::string(tag) + "z", n),
        v(std::string(tag) + "v", n), s(std::string(tag) + "s", m), y(std::string(tag) + "y", m),
        zs(std::string(tag) + "zs", m) {}
};

struct Residuals {
  double rb = 0, ru = 0, rd = 0;  // max |.| of the primal, bound and dual residuals
  double pobj = 0, dobj = 0;      // of the minimization
  double comp = 0;                // xᵀz + wᵀv + sᵀzs
};

// rb = b − A x − s, rcs = −y − zs (rows); rc = −c − Aᵀy − z + v, ru = 1 − x − w (columns).
Residuals residuals(const DeviceLP& lp, const Point& p, Vec rb, Vec rcs, Vec rc, Vec ru) {
  const auto rp = lp.rp, ci = lp.ci, cp = lp.cp, ri = lp.ri;
  const auto av = lp.av, cv = lp.cv, b = lp.b, c = lp.c;
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, y = p.y, zs = p.zs;
  Residuals r;
  double rd_rows = 0, by = 0, szs = 0;
  Kokkos::parallel_reduce(
      "lp::residual_rows", Kokkos::RangePolicy<Exec>(0, lp.m),
      KOKKOS_LAMBDA(const int i, double& mb, double& md, double& sby, double& sc) {
        double ax = 0;
        for (int q = rp(i); q < rp(i + 1); ++q) ax += av(q) * x(ci(q));
        rb(i) = b(i) - ax - s(i);
        rcs(i) = -y(i) - zs(i);
        const double ab = rb(i) < 0 ? -rb(i) : rb(i), ad = rcs(i) < 0 ? -rcs(i) : rcs(i);
        if (ab > mb) mb = ab;
        if (ad > md) md = ad;
        sby += b(i) * y(i);
        sc += s(i) * zs(i);
      },
      Kokkos::Max<double>(r.rb), Kokkos::Max<double>(rd_rows), Kokkos::Sum<double>(by),
      Kokkos::Sum<double>(szs));
  double rd_cols = 0, cx = 0, sv = 0, xzwv = 0;
  Kokkos::parallel_reduce(
      "lp::residual_cols", Kokkos::RangePolicy<Exec>(0, lp.n),
      KOKKOS_LAMBDA(const int j, double& mu, double& md, double& scx, double& ssv, double& sc) {
        double aty = 0;
        for (int q = cp(j); q < cp(j + 1); ++q) aty += cv(q) * y(ri(q));
        rc(j) = -c(j) - aty - z(j) + v(j);
        ru(j) = 1.0 - x(j) - w(j);
        const double au = ru(j) < 0 ? -ru(j) : ru(j), ad = rc(j) < 0 ? -rc(j) : rc(j);
        if (au > mu) mu = au;
        if (ad > md) md = ad;
        scx -= c(j) * x(j);
        ssv += v(j);
        sc += x(j) * z(j) + w(j) * v(j);
      },
      Kokkos::Max<double>(r.ru), Kokkos::Max<double>(rd_cols), Kokkos::Sum<double>(cx),
      Kokkos::Sum<double>(sv), Kokkos::Sum<double>(xzwv));
  r.rd = std::max(rd_rows, rd_cols);
  r.pobj = cx;
  r.dobj = by - sv;
  r.comp = xzwv + szs;
  return r;
}

// Θx = (z/x + v/w)⁻¹, Θs = s/zs.
void scaling(const Point& p, Vec theta, Vec theta_s) {
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, zs = p.zs;
  Kokkos::parallel_for(
      "lp::theta", Kokkos::RangePolicy<Exec>(0, int(x.extent(0))),
      KOKKOS_LAMBDA(const int j) { theta(j) = 1.0 / (z(j) / x(j) + v(j) / w(j)); });
  Kokkos::parallel_for(
      "lp::theta_s", Kokkos::RangePolicy<Exec>(0, int(s.extent(0))),
      KOKKOS_LAMBDA(const int i) { theta_s(i) = s(i) / zs(i); });
}

// Lower triangle of M = A·Θx·Aᵀ + Θs, times (1 + delta) on the diagonal. One team per column i of
// M, so every entry has one writer and the sums run in a fixed order (no atomics): zero the
// column, then for each nonzero a_ik of row i add a_ik·θ_k·a_jk over column k of A (rows j ≥ i).
void form_normal_matrix(const DeviceLP& lp, Vec theta, Vec theta_s, const double delta, Matrix M) {
  const auto rp = lp.rp, ci = lp.ci, cp = lp.cp, ri = lp.ri;
  const auto av = lp.av, cv = lp.cv;
  const int m = lp.m;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = Policy::member_type;
  Kokkos::parallel_for(
      "lp::form_M", Policy(m, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& t) {
        const int i = t.league_rank();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, i, m), [&](const int j) { M(j, i) = 0; });
        t.team_barrier();
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          for (int p = rp(i); p < rp(i + 1); ++p) {
            const int k = ci(p);
            const double f = av(p) * theta(k);
            for (int q = cp(k + 1) - 1; q >= cp(k) && ri(q) >= i; --q) M(ri(q), i) += f * cv(q);
          }
          M(i, i) = (M(i, i) + theta_s(i)) * (1.0 + delta);
        });
      });
}

// y = M x with the unregularized M, from A (for iterative refinement): t = Θx·Aᵀx, y = A t + Θs x.
void normal_matvec(const DeviceLP& lp, Vec theta, Vec theta_s, Vec x, Vec t, Vec y) {
  const auto rp = lp.rp, ci = lp.ci, cp = lp.cp, ri = lp.ri;
  const auto av = lp.av, cv = lp.cv;
  Kokkos::parallel_for(
      "lp::matvec_cols", Kokkos::RangePolicy<Exec>(0, lp.n), KOKKOS_LAMBDA(const int j) {
        double a = 0;
        for (int q = cp(j); q < cp(j + 1); ++q) a += cv(q) * x(ri(q));
        t(j) = theta(j) * a;
      });
  Kokkos::parallel_for(
      "lp::matvec_rows", Kokkos::RangePolicy<Exec>(0, lp.m), KOKKOS_LAMBDA(const int i) {
        double a = 0;
        for (int q = rp(i); q < rp(i + 1); ++q) a += av(q) * t(ci(q));
        y(i) = a + theta_s(i) * x(i);
      });
}

// The reduced right-hand side of the Newton system. Complementarity targets:
// rxz = σμ − x z − [Δx_a Δz_a], likewise for (w, v) and (s, zs); the bracket only in the corrector
// (cross = 1). r̂ = rc − rxz/x + (rwv − v ru)/w, r̂s = rcs − rsz/s; rhs = rb + A Θx r̂ + Θs r̂s.
void reduced_rhs(const DeviceLP& lp, const Point& p, const Point& aff, const double smu,
                 const double cross, Vec rb, Vec rcs, Vec rc, Vec ru, Vec theta, Vec theta_s,
                 Vec rhat, Vec rhat_s, Vec rhs) {
  const auto rp = lp.rp, ci = lp.ci;
  const auto av = lp.av;
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, zs = p.zs;
  const auto dx = aff.x, dw = aff.w, dz = aff.z, dv = aff.v, ds = aff.s, dzs = aff.zs;
  Kokkos::parallel_for(
      "lp::rhat", Kokkos::RangePolicy<Exec>(0, lp.n), KOKKOS_LAMBDA(const int j) {
        const double rxz = smu - x(j) * z(j) - (cross != 0 ? dx(j) * dz(j) : 0.0);
        const double rwv = smu - w(j) * v(j) - (cross != 0 ? dw(j) * dv(j) : 0.0);
        rhat(j) = rc(j) - rxz / x(j) + (rwv - v(j) * ru(j)) / w(j);
      });
  Kokkos::parallel_for(
      "lp::rhs", Kokkos::RangePolicy<Exec>(0, lp.m), KOKKOS_LAMBDA(const int i) {
        const double rsz = smu - s(i) * zs(i) - (cross != 0 ? ds(i) * dzs(i) : 0.0);
        rhat_s(i) = rcs(i) - rsz / s(i);
        double a = 0;
        for (int q = rp(i); q < rp(i + 1); ++q) {
          const int k = ci(q);
          a += av(q) * theta(k) * rhat(k);
        }
        rhs(i) = rb(i) + a + theta_s(i) * rhat_s(i);
      });
}

// The rest of the direction from d.y: Δx = Θx(AᵀΔy − r̂), Δz = (rxz − zΔx)/x, Δw = ru − Δx,
// Δv = (rwv − vΔw)/w, Δs = Θs(Δy − r̂s), Δzs = (rsz − zsΔs)/s.
void recover(const DeviceLP& lp, const Point& p, const Point& aff, const double smu,
             const double cross, Vec ru, Vec theta, Vec theta_s, Vec rhat, Vec rhat_s,
             const Point& d) {
  const auto cp = lp.cp, ri = lp.ri;
  const auto cv = lp.cv;
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, zs = p.zs;
  const auto ax = aff.x, aw = aff.w, az = aff.z, avv = aff.v, as = aff.s, azs = aff.zs;
  const auto dx = d.x, dw = d.w, dz = d.z, dv = d.v, ds = d.s, dy = d.y, dzs = d.zs;
  Kokkos::parallel_for(
      "lp::recover_cols", Kokkos::RangePolicy<Exec>(0, lp.n), KOKKOS_LAMBDA(const int j) {
        const double rxz = smu - x(j) * z(j) - (cross != 0 ? ax(j) * az(j) : 0.0);
        const double rwv = smu - w(j) * v(j) - (cross != 0 ? aw(j) * avv(j) : 0.0);
        double aty = 0;
        for (int q = cp(j); q < cp(j + 1); ++q) aty += cv(q) * dy(ri(q));
        const double ddx = theta(j) * (aty - rhat(j));
        const double ddw = ru(j) - ddx;
        dx(j) = ddx;
        dw(j) = ddw;
        dz(j) = (rxz - z(j) * ddx) / x(j);
        dv(j) = (rwv - v(j) * ddw) / w(j);
      });
  Kokkos::parallel_for(
      "lp::recover_rows", Kokkos::RangePolicy<Exec>(0, lp.m), KOKKOS_LAMBDA(const int i) {
        const double rsz = smu - s(i) * zs(i) - (cross != 0 ? as(i) * azs(i) : 0.0);
        const double dds = theta_s(i) * (dy(i) - rhat_s(i));
        ds(i) = dds;
        dzs(i) = (rsz - zs(i) * dds) / s(i);
      });
}

// Largest steps (uncapped) that keep (x, w, s) and (z, v, zs) nonnegative.
void max_steps(const Point& p, const Point& d, double& ap, double& ad) {
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, zs = p.zs;
  const auto dx = d.x, dw = d.w, dz = d.z, dv = d.v, ds = d.s, dzs = d.zs;
  double p1 = 0, d1 = 0, p2 = 0, d2 = 0;
  Kokkos::parallel_reduce(
      "lp::ratio_cols", Kokkos::RangePolicy<Exec>(0, int(x.extent(0))),
      KOKKOS_LAMBDA(const int j, double& mp, double& md) {
        if (dx(j) < 0 && -x(j) / dx(j) < mp) mp = -x(j) / dx(j);
        if (dw(j) < 0 && -w(j) / dw(j) < mp) mp = -w(j) / dw(j);
        if (dz(j) < 0 && -z(j) / dz(j) < md) md = -z(j) / dz(j);
        if (dv(j) < 0 && -v(j) / dv(j) < md) md = -v(j) / dv(j);
      },
      Kokkos::Min<double>(p1), Kokkos::Min<double>(d1));
  Kokkos::parallel_reduce(
      "lp::ratio_rows", Kokkos::RangePolicy<Exec>(0, int(s.extent(0))),
      KOKKOS_LAMBDA(const int i, double& mp, double& md) {
        if (ds(i) < 0 && -s(i) / ds(i) < mp) mp = -s(i) / ds(i);
        if (dzs(i) < 0 && -zs(i) / dzs(i) < md) md = -zs(i) / dzs(i);
      },
      Kokkos::Min<double>(p2), Kokkos::Min<double>(d2));
  ap = std::min(p1, p2);  // DBL_MAX when nothing decreases
  ad = std::min(d1, d2);
}

// Complementarity after the steps (ap, ad) along d, for Mehrotra's σ.
double comp_after(const Point& p, const Point& d, const double ap, const double ad) {
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, zs = p.zs;
  const auto dx = d.x, dw = d.w, dz = d.z, dv = d.v, ds = d.s, dzs = d.zs;
  double c1 = 0, c2 = 0;
  Kokkos::parallel_reduce(
      "lp::comp_cols", Kokkos::RangePolicy<Exec>(0, int(x.extent(0))),
      KOKKOS_LAMBDA(const int j, double& a) {
        a += (x(j) + ap * dx(j)) * (z(j) + ad * dz(j)) + (w(j) + ap * dw(j)) * (v(j) + ad * dv(j));
      },
      c1);
  Kokkos::parallel_reduce(
      "lp::comp_rows", Kokkos::RangePolicy<Exec>(0, int(s.extent(0))),
      KOKKOS_LAMBDA(const int i, double& a) { a += (s(i) + ap * ds(i)) * (zs(i) + ad * dzs(i)); },
      c2);
  return c1 + c2;
}

void take_step(const Point& p, const Point& d, const double ap, const double ad) {
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, y = p.y, zs = p.zs;
  const auto dx = d.x, dw = d.w, dz = d.z, dv = d.v, ds = d.s, dy = d.y, dzs = d.zs;
  Kokkos::parallel_for(
      "lp::step_cols", Kokkos::RangePolicy<Exec>(0, int(x.extent(0))), KOKKOS_LAMBDA(const int j) {
        x(j) += ap * dx(j);
        w(j) += ap * dw(j);
        z(j) += ad * dz(j);
        v(j) += ad * dv(j);
      });
  Kokkos::parallel_for(
      "lp::step_rows", Kokkos::RangePolicy<Exec>(0, int(s.extent(0))), KOKKOS_LAMBDA(const int i) {
        s(i) += ap * ds(i);
        y(i) += ad * dy(i);
        zs(i) += ad * dzs(i);
      });
}

// Starting point: x = w = 1/2, s = max(b − A x, 1), y = −1, zs = 1, and (z, v) split
// −c − Aᵀy = z − v with both at least 1: dual feasible, primal infeasible only in rb.
void starting_point(const DeviceLP& lp, const Point& p) {
  const auto rp = lp.rp, ci = lp.ci, cp = lp.cp, ri = lp.ri;
  const auto av = lp.av, cv = lp.cv, b = lp.b, c = lp.c;
  const auto x = p.x, w = p.w, z = p.z, v = p.v, s = p.s, y = p.y, zs = p.zs;
  Kokkos::deep_copy(x, 0.5);
  Kokkos::deep_copy(w, 0.5);
  Kokkos::deep_copy(y, -1.0);
  Kokkos::deep_copy(zs, 1.0);
  Kokkos::parallel_for(
      "lp::start_rows", Kokkos::RangePolicy<Exec>(0, lp.m), KOKKOS_LAMBDA(const int i) {
        double ax = 0;
        for (int q = rp(i); q < rp(i + 1); ++q) ax += av(q) * x(ci(q));
        const double r = b(i) - ax;
        s(i) = r > 1.0 ? r : 1.0;
      });
  Kokkos::parallel_for(
      "lp::start_cols", Kokkos::RangePolicy<Exec>(0, lp.n), KOKKOS_LAMBDA(const int j) {
        double aty = 0;
        for (int q = cp(j); q < cp(j + 1); ++q) aty += cv(q) * y(ri(q));
        const double r = -c(j) - aty;
        z(j) = (r > 0 ? r : 0.0) + 1.0;
        v(j) = (r < 0 ? -r : 0.0) + 1.0;
      });
}

double max_abs(Vec a) {
  double r = 0;
  Kokkos::parallel_reduce(
      "lp::max_abs", Kokkos::RangePolicy<Exec>(0, int(a.extent(0))),
      KOKKOS_LAMBDA(const int i, double& mx) {
        const double t = a(i) < 0 ? -a(i) : a(i);
        if (t > mx) mx = t;
      },
      Kokkos::Max<double>(r));
  return r;
}

// r = rhs − M y; returns max |r|.
double refine_residual(const DeviceLP& lp, Vec theta, Vec theta_s, Vec y, Vec rhs, Vec t, Vec r) {
  normal_matvec(lp, theta, theta_s, y, t, r);
  double mx = 0;
  Kokkos::parallel_reduce(
      "lp::refine_residual", Kokkos::RangePolicy<Exec>(0, lp.m),
      KOKKOS_LAMBDA(const int i, double& a) {
        r(i) = rhs(i) - r(i);
        const double e = r(i) < 0 ? -r(i) : r(i);
        if (e > a) a = e;
      },
      Kokkos::Max<double>(mx));
  return mx;
}

void axpy_into(Vec out, Vec x, Vec d) {
  Kokkos::parallel_for(
      "lp::axpy", Kokkos::RangePolicy<Exec>(0, int(out.extent(0))),
      KOKKOS_LAMBDA(const int i) { out(i) = x(i) + d(i); });
}

// The first potrf creates the vendor BLAS handles (about 0.1 s with cuBLAS): do that on a small
// SPD matrix, outside the timed iterations.
void warm_up(const int k) {
  Matrix a("warm_up", k, k);
  Vec b("warm_up_b", k);
  Kokkos::parallel_for(
      "lp::warm_up", Kokkos::RangePolicy<Exec>(0, k), KOKKOS_LAMBDA(const int i) {
        a(i, i) = 2.0;
        b(i) = 1.0;
      });
  if (kolesky::potrf(Exec(), kolesky::Uplo::Lower, a) != 0)
    throw std::runtime_error("potrf failed on 2 I");
  kolesky::potrs(Exec(), kolesky::Uplo::Lower, a, b);
}

// ----------------------------------------------------------------------------------------------
// The interior-point method

struct Options {
  bool quiet = false;
  int max_iter = 100;
  double tol = 1e-8;
  double eta = 0.995;  // fraction to the boundary
};

struct Result {
  bool converged = false;
  int iterations = 0;
  double objective = 0;  // of the max problem, cᵀx
  double pinf = 0, dinf = 0, gap = 0;
  double t_total = 0, t_chol = 0;
  int regularized = 0;      // iterations that needed δ > 0
  int failed_potrf = 0;     // potrf calls that returned info > 0
  int refinements = 0;      // refinement solves
  double max_delta = 0;
  std::vector<double> x;    // on the host
};

class Solver {
 public:
  Solver(const DeviceLP& lp, const Options& opt)
      : lp_(lp), opt_(opt), p_("p_", lp.n, lp.m), aff_("a_", lp.n, lp.m), d_("d_", lp.n, lp.m),
        M_("M", lp.m, lp.m), theta_("theta", lp.n), theta_s_("theta_s", lp.m),
        rhat_("rhat", lp.n), rhat_s_("rhat_s", lp.m), rb_("rb", lp.m), rcs_("rcs", lp.m),
        rc_("rc", lp.n), ru_("ru", lp.n), rhs_("rhs", lp.m), tn_("tn", lp.n), r_("r", lp.m),
        y2_("y2", lp.m) {}

  Result solve() {
    Result res;
    warm_up(std::min(lp_.m, 512));
    Kokkos::Timer total;
    starting_point(lp_, p_);
    const double bnorm = max_abs(lp_.b), cnorm = max_abs(lp_.c);
    const double ncomp = 2.0 * lp_.n + lp_.m;
    double last_delta = 0, ap = 0, ad = 0;
    if (!opt_.quiet)
      std::printf("%4s %10s %10s %10s %10s %6s %6s %8s %10s %10s\n", "iter", "pinf", "dinf",
                  "rel.gap", "mu", "a_p", "a_d", "delta", "chol[ms]", "rest[ms]");
    double t_chol_it = 0, t_rest_it = 0, delta_it = 0;
    for (int it = 0;; ++it) {
      Kokkos::Timer iter_timer;
      const Residuals r = residuals(lp_, p_, rb_, rcs_, rc_, ru_);
      res.pinf = std::max(r.rb / (1 + bnorm), r.ru / 2.0);
      res.dinf = r.rd / (1 + cnorm);
      res.gap = std::fabs(r.pobj - r.dobj) / (1 + std::fabs(r.pobj));
      const double mu = r.comp / ncomp;
      t_rest_it += iter_timer.seconds();
      if (!opt_.quiet)
        std::printf("%4d %10.3e %10.3e %10.3e %10.3e %6.4f %6.4f %8.1e %10.3f %10.3f\n", it,
                    res.pinf, res.dinf, res.gap, mu, ap, ad, delta_it, 1e3 * t_chol_it,
                    1e3 * t_rest_it);
      res.iterations = it;
      res.objective = -r.pobj;
      if (!std::isfinite(res.pinf + res.dinf + res.gap)) break;
      if (res.pinf <= opt_.tol && res.dinf <= opt_.tol && res.gap <= opt_.tol) {
        res.converged = true;
        break;
      }
      if (it == opt_.max_iter) break;

      // One iteration: factor M once, solve for the predictor and the corrector.
      t_chol_it = 0;
      iter_timer.reset();
      scaling(p_, theta_, theta_s_);
      delta_it = factor(last_delta, res, t_chol_it);
      last_delta = delta_it;

      // Predictor (affine scaling).
      reduced_rhs(lp_, p_, aff_, 0.0, 0.0, rb_, rcs_, rc_, ru_, theta_, theta_s_, rhat_, rhat_s_,
                  rhs_);
      linear_solve(delta_it > 0, aff_.y, res, t_chol_it);
      recover(lp_, p_, aff_, 0.0, 0.0, ru_, theta_, theta_s_, rhat_, rhat_s_, aff_);
      double ap_aff = 0, ad_aff = 0;
      max_steps(p_, aff_, ap_aff, ad_aff);
      ap_aff = std::min(1.0, ap_aff);
      ad_aff = std::min(1.0, ad_aff);
      const double mu_aff = comp_after(p_, aff_, ap_aff, ad_aff) / ncomp;
      const double sigma = std::pow(mu_aff / mu, 3);

      // Corrector: centering σμ and the second-order term Δx_a Δz_a.
      reduced_rhs(lp_, p_, aff_, sigma * mu, 1.0, rb_, rcs_, rc_, ru_, theta_, theta_s_, rhat_,
                  rhat_s_, rhs_);
      linear_solve(delta_it > 0, d_.y, res, t_chol_it);
      recover(lp_, p_, aff_, sigma * mu, 1.0, ru_, theta_, theta_s_, rhat_, rhat_s_, d_);
      max_steps(p_, d_, ap, ad);
      ap = std::min(1.0, opt_.eta * ap);
      ad = std::min(1.0, opt_.eta * ad);
      take_step(p_, d_, ap, ad);
      Exec().fence();
      t_rest_it = iter_timer.seconds() - t_chol_it;
      res.t_chol += t_chol_it;
    }
    Exec().fence();
    res.t_total = total.seconds();
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p_.x);
    res.x.assign(hx.data(), hx.data() + hx.extent(0));
    return res;
  }

 private:
  // Form and factor M, regularizing with δ·diag(M) (a scale-free δ·I) when potrf reports a
  // nonpositive pivot: δ grows 100× per retry. Starts from a tenth of the last iteration's δ,
  // since ill-conditioning only grows towards the optimum. Returns the δ used.
  double factor(const double last_delta, Result& res, double& t_chol) {
    double delta = last_delta > 1e-13 ? last_delta / 10 : 0.0;
    for (;;) {
      form_normal_matrix(lp_, theta_, theta_s_, delta, M_);
      Exec().fence();
      Kokkos::Timer t;
      const int info = kolesky::potrf(Exec(), kolesky::Uplo::Lower, M_);
      t_chol += t.seconds();
      if (info == 0) break;
      ++res.failed_potrf;
      if (delta >= 1e-2)
        throw std::runtime_error("normal matrix not positive definite even with delta = " +
                                 std::to_string(delta) + " (info = " + std::to_string(info) + ")");
      delta = delta == 0 ? 1e-14 : delta * 100;
    }
    if (delta > 0) ++res.regularized;
    res.max_delta = std::max(res.max_delta, delta);
    return delta;
  }

  // dy = M⁻¹ rhs_ with the factor; with a regularized factor, iterative refinement against the
  // true M (from A, Θ) while the residual keeps dropping.
  void linear_solve(const bool refine, Vec dy, Result& res, double& t_chol) {
    Kokkos::deep_copy(dy, rhs_);
    Exec().fence();
    Kokkos::Timer t;
    kolesky::potrs(Exec(), kolesky::Uplo::Lower, M_, dy);
    t_chol += t.seconds();
    if (!refine) return;
    const double target = 1e-14 * (1 + max_abs(rhs_));
    double err = refine_residual(lp_, theta_, theta_s_, dy, rhs_, tn_, r_);
    for (int k = 0; k < 5 && err > target; ++k) {
      t.reset();
      kolesky::potrs(Exec(), kolesky::Uplo::Lower, M_, r_);
      t_chol += t.seconds();
      ++res.refinements;
      axpy_into(y2_, dy, r_);
      const double err2 = refine_residual(lp_, theta_, theta_s_, y2_, rhs_, tn_, r_);
      if (!(err2 < err)) break;
      Kokkos::deep_copy(dy, y2_);
      err = err2;
      // r_ holds the residual of the accepted y2_ == dy.
    }
  }

  DeviceLP lp_;
  Options opt_;
  Point p_, aff_, d_;
  Matrix M_;
  Vec theta_, theta_s_, rhat_, rhat_s_, rb_, rcs_, rc_, ru_, rhs_, tn_, r_, y2_;
};

// ----------------------------------------------------------------------------------------------
// Checks on the host

// max violation of A x ≤ b and 0 ≤ x ≤ 1.
double max_violation(const HostLP& lp, const std::vector<double>& x) {
  double v = 0;
  for (int i = 0; i < lp.m; ++i) {
    double ax = 0;
    for (int p = lp.rp[i]; p < lp.rp[i + 1]; ++p) ax += lp.av[p] * x[lp.ci[p]];
    v = std::max(v, ax - lp.b[i]);
  }
  for (int j = 0; j < lp.n; ++j) v = std::max({v, -x[j], x[j] - 1.0});
  return v;
}

#ifdef KOLESKY_EXAMPLE_HAVE_GLPK
// Solves the same LP with GLPK's simplex; returns false when GLPK does not report an optimum.
bool solve_glpk(const HostLP& lp, double& obj, double& seconds) {
  glp_prob* g = glp_create_prob();
  glp_set_obj_dir(g, GLP_MAX);
  glp_add_rows(g, lp.m);
  for (int i = 0; i < lp.m; ++i) glp_set_row_bnds(g, i + 1, GLP_UP, 0.0, lp.b[i]);
  glp_add_cols(g, lp.n);
  for (int j = 0; j < lp.n; ++j) {
    glp_set_col_bnds(g, j + 1, GLP_DB, 0.0, 1.0);
    glp_set_obj_coef(g, j + 1, lp.c[j]);
  }
  const int nnz = lp.rp[lp.m];
  std::vector<int> ia(nnz + 1), ja(nnz + 1);  // GLPK is 1-based, entry 0 unused
  std::vector<double> ar(nnz + 1);
  for (int i = 0; i < lp.m; ++i)
    for (int p = lp.rp[i]; p < lp.rp[i + 1]; ++p) {
      ia[p + 1] = i + 1;
      ja[p + 1] = lp.ci[p] + 1;
      ar[p + 1] = lp.av[p];
    }
  glp_load_matrix(g, nnz, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  Kokkos::Timer t;
  const int rc = glp_simplex(g, &parm);
  seconds = t.seconds();
  const bool ok = rc == 0 && glp_get_status(g) == GLP_OPT;
  obj = glp_get_obj_val(g);
  glp_delete_prob(g);
  return ok;
}
#endif

int parse_int(const char* flag, const char* value) {
  if (value == nullptr) throw std::invalid_argument(std::string(flag) + " needs a value");
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < 1 || v > 100000)
    throw std::invalid_argument(std::string(flag) + ": expected a positive integer, got '" +
                                value + "'");
  return int(v);
}

double parse_tol(const char* value) {
  if (value == nullptr) throw std::invalid_argument("--tol needs a value");
  char* end = nullptr;
  const double v = std::strtod(value, &end);
  if (*value == '\0' || *end != '\0' || !(v >= 1e-14 && v <= 1e-2))
    throw std::invalid_argument(std::string("--tol: expected a number in [1e-14, 1e-2], got '") +
                                value + "'");
  return v;
}

int run(int argc, char* argv[]) {
  int nx = 10, ny = 10, nz = 4, seed = 1;
  bool quiet = false, check = false;
  double tol = 1e-8;
  for (int a = 1; a < argc; ++a) {
    const std::string f = argv[a];
    const char* val = a + 1 < argc ? argv[a + 1] : nullptr;
    if (f == "--nx") nx = parse_int("--nx", val), ++a;
    else if (f == "--ny") ny = parse_int("--ny", val), ++a;
    else if (f == "--nz") nz = parse_int("--nz", val), ++a;
    else if (f == "--seed") seed = parse_int("--seed", val), ++a;
    else if (f == "--tol") tol = parse_tol(val), ++a;
    else if (f == "--quiet") quiet = true;
    else if (f == "--check-glpk") check = true;
    else if (f.rfind("--kokkos", 0) == 0) continue;
    else if (f == "--help" || f == "-h") {
      std::printf("usage: %s [--nx N --ny N --nz N] [--seed S] [--quiet] [--check-glpk] [--tol T]\n",
                  argv[0]);
      return 0;
    } else {
      throw std::invalid_argument("unknown argument '" + f + "' (try --help)");
    }
  }
  if (double(nx) * ny * nz > 1e7) throw std::invalid_argument("block model too large");
#ifndef KOLESKY_EXAMPLE_HAVE_GLPK
  if (check) {
    std::fprintf(stderr, "--check-glpk: this build has no GLPK\n");
    return 2;
  }
#endif

  const HostLP h = make_instance(nx, ny, nz, std::uint64_t(seed));
  std::printf("Kolesky %s on %s: open-pit LP, %d x %d x %d blocks, seed %d\n", KOLESKY_VERSION,
              Exec::name(), nx, ny, nz, seed);
  std::printf("  n = %d variables (blocks, 0 <= x <= 1), %d rows (%d precedence + capacity %.2f kt)"
              ", nnz(A) = %d\n  normal matrix order m = %d\n",
              h.n, h.m, h.m - 1, h.capacity, h.rp[h.m], h.m);
  const DeviceLP d = to_device(h);
  Options opt;
  opt.quiet = quiet;
  opt.tol = tol;
  Solver solver(d, opt);
  Result r = solver.solve();
  if (const char* brk = std::getenv("KOLESKY_LP_BREAK"); brk != nullptr && std::strcmp(brk, "1") == 0)
    r.objective *= 1 + 1e-4;

  const double viol = max_violation(h, r.x);
  double mined = 0;
  for (int j = 0; j < h.n; ++j) mined += h.tonnage[j] * r.x[j];
  std::printf("%s after %d iterations: objective %.10g\n",
              r.converged ? "converged" : "NOT CONVERGED", r.iterations, r.objective);
  std::printf("  pinf %.2e, dinf %.2e, rel.gap %.2e; max violation of A x <= b, 0 <= x <= 1: %.2e\n",
              r.pinf, r.dinf, r.gap, viol);
  std::printf("  mined %.2f kt of capacity %.2f kt\n", mined, h.capacity);
  std::printf("  time %.3f s, Cholesky (potrf + potrs) %.3f s = %.1f%%\n", r.t_total, r.t_chol,
              r.t_total > 0 ? 100 * r.t_chol / r.t_total : 0.0);
  std::printf("  regularized %d iteration(s) (%d potrf calls with info > 0, max delta %.1e, "
              "%d refinement solves)\n",
              r.regularized, r.failed_potrf, r.max_delta, r.refinements);
  int rc = r.converged ? 0 : 1;
  if (viol > 1e-6) {
    std::printf("  FAILED: the solution violates the constraints\n");
    rc = 1;
  }
#ifdef KOLESKY_EXAMPLE_HAVE_GLPK
  if (check) {
    double og = 0, tg = 0;
    if (!solve_glpk(h, og, tg)) {
      std::printf("  GLPK: no optimum reported\n");
      return 1;
    }
    const double diff = std::fabs(r.objective - og), limit = 1e-6 * std::max(1.0, std::fabs(og));
    std::printf("  GLPK simplex: objective %.10g (%.3f s), |difference| %.2e, tolerance %.2e: %s\n",
                og, tg, diff, limit, diff <= limit ? "OK" : "MISMATCH");
    if (!(diff <= limit)) rc = 1;
  }
#endif
  return rc;
}

}  // namespace lpex

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    return lpex::run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "03_interior_point_lp: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "03_interior_point_lp: %s\n", e.what());
    return 1;
  }
}
