module traceidx/bench/oldtrace

go 1.19
