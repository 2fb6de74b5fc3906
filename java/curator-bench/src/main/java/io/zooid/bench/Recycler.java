package io.zooid.bench;

import java.io.BufferedReader;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * One client of a recycling contender ({@link ZooidContender}, {@link RawContender}): a take and
 * the push-back of part of it per {@link #cycle}, counted and timed for the window.
 */
abstract class Recycler {
    final Kept kept = new Kept();
    long ops;
    long errors;
    long pushErrors;
    long ids;
    final StringBuilder takeLatency = new StringBuilder();
    final StringBuilder pushLatency = new StringBuilder();

    /** A take and its push-back, recorded when {@code timed}; false when either failed. */
    abstract boolean cycle(boolean timed);

    /** Records a take that handed out {@code kept} IDs in {@code micros}. */
    final void tookIn(long micros, long kept, boolean timed) {
        if (timed) {
            ids += kept;
            takeLatency.append(' ').append(micros);
        }
    }

    /** A push-back. */
    interface Push {
        void run() throws Exception;
    }

    /** Runs {@code push}, recorded when {@code timed}; false when it failed. */
    final boolean pushBack(Push push, boolean timed) {
        long t0 = System.nanoTime();
        try {
            push.run();
        } catch (Exception e) {
            if (timed) {
                pushErrors++;
            }
            return false;
        }
        if (timed) {
            pushLatency.append(' ').append((System.nanoTime() - t0) / 1000);
        }
        return true;
    }

    /** Ends the client's session. */
    abstract void close() throws Exception;

    /**
     * The whole protocol ({@link Protocol}) for {@code clients}: one unrecorded cycle each, then
     * the window ({@link #runWindow}) on {@code go}, then their sessions closed at EOF.
     */
    static void serve(List<? extends Recycler> clients, long windowNanos) throws Exception {
        for (Recycler client : clients) {
            if (!client.cycle(false)) {
                throw new IllegalStateException("warm-up take failed");
            }
        }
        BufferedReader in = Protocol.stdin();
        Protocol.readyThenAwaitGo(in);
        runWindow(clients, windowNanos);
        Protocol.awaitEof(in);
        for (Recycler client : clients) {
            client.close();
        }
    }

    /**
     * Runs every client in a thread of its own for the window, then prints each one's report:
     * {@code push-errors N}, {@code push-latency L1 ...}, {@code kept S:E ...} and
     * {@code done OPS ERRORS IDS L1 ...} (take latencies in microseconds).
     */
    static void runWindow(List<? extends Recycler> clients, long windowNanos) throws InterruptedException {
        CountDownLatch finished = new CountDownLatch(clients.size());
        long start = System.nanoTime();
        for (Recycler client : clients) {
            Thread t = new Thread(() -> {
                while (System.nanoTime() - start < windowNanos) {
                    if (client.cycle(true)) {
                        client.ops++;
                    } else {
                        client.errors++;
                    }
                }
                finished.countDown();
            });
            t.start();
        }
        finished.await();
        for (Recycler c : clients) {
            System.out.println("push-errors " + c.pushErrors);
            System.out.println("push-latency" + c.pushLatency);
            System.out.println(c.kept);
            System.out.println("done " + c.ops + " " + c.errors + " " + c.ids + c.takeLatency);
        }
        System.out.flush();
    }
}
