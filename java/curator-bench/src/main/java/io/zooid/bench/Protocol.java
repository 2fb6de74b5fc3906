package io.zooid.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The contenders' side of the bench's stdin/stdout protocol (examples/contender.rs):
 * {@code ready} once warmed up, {@code go} on stdin starts the window, EOF on stdin ends the
 * process's sessions.
 */
final class Protocol {
    private Protocol() {}

    /** The bench's lines. */
    static BufferedReader stdin() {
        return new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }

    /** Says {@code ready} and waits for {@code go}. */
    static void readyThenAwaitGo(BufferedReader in) throws IOException {
        System.out.println("ready");
        System.out.flush();
        String go = in.readLine();
        if (!"go".equals(go)) {
            throw new IllegalStateException("expected go, got " + go);
        }
    }

    /** Waits until the bench closes stdin. */
    static void awaitEof(BufferedReader in) throws IOException {
        while (in.readLine() != null) {
            // wait for EOF
        }
    }
}
