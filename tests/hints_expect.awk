# From a hints.yaml of toposcope place (ranks), what twolevel_bcast must print for every rank and
# level, as "rank=R level=L group=G leader=X size=S" (sorted): the size of a rank's group is the
# number of ranks with the same group id at that level. Used by tests/hints.t and
# tests/testbed-hints.t to hold the program's communicators against the file.
# With -v what=cpus: "rank=R cpus=LIST", the CPUs hints.yaml gives each rank (its binding).
/^  - \{name: / {
    name = $3; sub(/,$/, "", name); level[nlevels++] = name; next
}
/^  - \{rank: / {
    r = $3; sub(/,$/, "", r)
    g = $0; sub(/.*group: \[/, "", g); sub(/\].*/, "", g)
    ld = $0; sub(/.*leader: \[/, "", ld); sub(/\].*/, "", ld)
    ng = split(g, gs, /, /); split(ld, ls, /, /)
    for (l = 1; l <= ng; l++) {
        grp[r, l - 1] = gs[l]; lead[r, l - 1] = ls[l]; size[l - 1, gs[l]]++
    }
    c = $0; sub(/.*cpus: "/, "", c); sub(/".*/, "", c); cpus[r] = c
    ranks[nranks++] = r
}
END {
    if (what == "cpus") {
        for (i = 0; i < nranks; i++)
            printf "rank=%s cpus=%s\n", ranks[i], cpus[ranks[i]]
        exit
    }
    for (i = 0; i < nranks; i++)
        for (l = 0; l < nlevels; l++) {
            r = ranks[i]
            printf "rank=%s level=%s group=%s leader=%s size=%d\n", r, level[l], grp[r, l], lead[r, l], size[l, grp[r, l]]
        }
}
