import Foundation
import Testing

/// End-to-end tests of issue 2: the real `fpfs` binary in a subprocess, a real FUSE mount on a
/// temporary mountpoint, and the ordinary tools a user would run against it.
///
/// Every test is nested in this one serialized suite, so mounts never run side by side: each one
/// runs a daemon and a build machine has two cores. Each test unmounts in a `defer`. The shortest
/// time limit of a test and its suites applies: the checker's long run (FPFS_CHECK_SEQUENCES,
/// `scripts/soak.sh`) needs hours, and was cut off after 15 minutes.
@Suite(.serialized, .timeLimit(.minutes(ProcessInfo.processInfo.environment["FPFS_CHECK_SEQUENCES"] == nil ? 15 : 600)))
enum MountTests {}
