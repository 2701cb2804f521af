# Reference values for alisio.core.stats.inverted.boschloo_interval, from an independent implementation: the R
# package exact2x2 (Fay and Hunsberger), whose uncondExact2x2 inverts an exact unconditional test of the
# difference p2 - p1 for any ordering statistic. Given Fisher's one-sided p-value as the ordering (the
# statistic of Boschloo's test) and the central two-sided method (two one-sided tests at 2.5%), it computes
# the same interval as alisio, by its own search: a grid of nPgrid nuisance values and a grid search over
# the difference. Run once, by hand (R and exact2x2 are not dependencies of alisio):
#   Rscript tests/property/data/generate_exact_interval_reference.R > tests/property/data/exact_interval_reference.json
# Group 1 is the baseline and group 2 the candidate, so the difference is candidate - baseline.
suppressMessages(library(exact2x2))
better <- function(X1, N1, X2, N2, delta0) phyper(X2 - 1, N2, N1, X1 + X2)  # larger: candidate better
worse <- function(X1, N1, X2, N2, delta0) phyper(X2, N2, N1, X1 + X2)      # smaller: candidate worse
ctl <- ucControl(nPgrid = 1000)
tables <- list(c(0, 5, 3, 5), c(10, 10, 6, 10), c(5, 10, 5, 10), c(0, 5, 5, 5), c(1, 5, 5, 5),
               c(3, 7, 6, 9), c(2, 20, 9, 20), c(4, 10, 6, 10), c(0, 10, 0, 10), c(7, 8, 1, 12),
               c(5, 5, 0, 5), c(9, 20, 14, 20), c(12, 30, 20, 25), c(40, 50, 45, 50), c(100, 200, 125, 200))
rows <- sapply(tables, function(t) {
  g <- uncondExact2x2(t[1], t[2], t[3], t[4], alternative = "greater", parmtype = "difference",
                      method = "user-fixed", Tfunc = better, conf.int = TRUE, conf.level = 0.975, control = ctl)
  l <- uncondExact2x2(t[1], t[2], t[3], t[4], alternative = "less", parmtype = "difference",
                      method = "user-fixed", Tfunc = worse, conf.int = TRUE, conf.level = 0.975, control = ctl)
  sprintf('    {"counts": [%d, %d, %d, %d], "interval": [%.10f, %.10f], "oneSided": [%.10f, %.10f]}',
          t[1], t[2], t[3], t[4], g$conf.int[1], l$conf.int[2], g$p.value, l$p.value)
})
cat('{\n  "source": "R exact2x2 1.7.0, uncondExact2x2(method = \\"user-fixed\\", Fisher one-sided ordering, central, conf.level 0.975 per side, nPgrid = 1000)",\n  "tables": [\n')
cat(paste(rows, collapse = ",\n"))
cat("\n  ]\n}\n")
