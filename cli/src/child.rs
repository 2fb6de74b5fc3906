//! Commands the CLI starts that must not outlive the process that started them.

/// To run in a forked child before `exec` (async-signal-safe): the child gets SIGKILL when the
/// thread that forked it ends, and ends at once if `parent` (the forking process's pid, read
/// before the fork) ended already, when the request would come too late.
pub(crate) fn die_with(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl(2), getppid(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    Ok(())
}
