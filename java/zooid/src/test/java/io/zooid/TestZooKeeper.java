package io.zooid;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * A real, standalone Apache ZooKeeper server running inside the test JVM on a free loopback port,
 * with its data in a temporary directory that {@link #close()} removes.
 */
public final class TestZooKeeper implements AutoCloseable {
    private final Path dataDir;
    private final ServerCnxnFactory factory;
    private final ZooKeeperServer server;
    private final int port;
    private boolean running;

    private TestZooKeeper(Path dataDir, ServerCnxnFactory factory, ZooKeeperServer server, int port) {
        this.dataDir = dataDir;
        this.factory = factory;
        this.server = server;
        this.port = port;
        this.running = true;
    }

    /** Starts a server on 127.0.0.1 and an ephemeral port. */
    public static TestZooKeeper start() throws IOException, InterruptedException {
        Path dataDir = Files.createTempDirectory("zooid-zk-");
        File dir = dataDir.toFile();
        ZooKeeperServer server = new ZooKeeperServer(dir, dir, 500);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 200);
        factory.startup(server);
        return new TestZooKeeper(dataDir, factory, server, factory.getLocalPort());
    }

    /** The connect string, {@code 127.0.0.1:PORT}. */
    public String connectString() {
        return "127.0.0.1:" + port;
    }

    /** A plain ZooKeeper Java client, connected; the caller closes it. */
    public ZooKeeper client() throws IOException, InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connectString(), 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(10, TimeUnit.SECONDS)) {
            zk.close();
            throw new IOException("could not connect to " + connectString());
        }
        return zk;
    }

    /** The number of sessions the server holds (what {@code mntr} reports as zk_global_sessions). */
    public long sessionCount() {
        return server.getZKDatabase().getSessionWithTimeOuts().size();
    }

    /** Stops the server (its clients lose their connection); the data directory stays. */
    public synchronized void stop() {
        if (running) {
            running = false;
            factory.shutdown();
        }
    }

    @Override
    public synchronized void close() throws IOException {
        stop();
        try (Stream<Path> paths = Files.walk(dataDir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
