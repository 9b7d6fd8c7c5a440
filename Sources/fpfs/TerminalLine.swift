import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Lines that fit the terminal they are drawn on: a line one column too wide wraps, and a
/// progress line redrawn in place (`\r`) then leaves a trail of copies.
enum TerminalLine {
    /// The narrowest width laid out for; narrower terminals wrap.
    static let narrowest = 60

    /// The columns of stdout's terminal (80 when it says 0, as a fresh pty does); nil when stdout
    /// is not a terminal.
    static func width() -> Int? {
        guard isatty(STDOUT_FILENO) != 0 else { return nil }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `line` cut to `width - 1` columns (the last column is left free: writing it makes some
    /// terminals wrap), with `…` where it was cut.
    static func fit(_ line: String, width: Int) -> String {
        let room = max(width - 1, 1)
        guard line.count > room else { return line }
        return String(line.prefix(room - 1)) + "…"
    }

    /// A bar of `fraction` followed by the first of `texts` (longest first) that leaves the bar
    /// at least 10 columns within the width; the last text cut to fit when none does.
    static func bar(_ fraction: Double, then texts: [String], width: Int, prefix: String = "") -> String {
        let room = max(width - 1, 1)
        // "[" + bar + "] 100% " around the bar.
        let frame = prefix.count + 8
        for text in texts {
            let barWidth = min(30, room - frame - text.count)
            if barWidth >= 10 { return prefix + StatusReport.bar(fraction, width: barWidth) + " " + text }
        }
        return fit(prefix + StatusReport.bar(fraction, width: 10) + " " + (texts.last ?? ""), width: width)
    }
}
