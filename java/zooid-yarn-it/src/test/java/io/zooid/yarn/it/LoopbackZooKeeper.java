package io.zooid.yarn.it;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * A real, standalone ZooKeeper server inside the test JVM on 127.0.0.1 and a free port, as the
 * other Java tests start it; the container JVMs reach it over loopback.
 */
final class LoopbackZooKeeper implements AutoCloseable {
    private final ServerCnxnFactory factory;

    private LoopbackZooKeeper(ServerCnxnFactory factory) {
        this.factory = factory;
    }

    /** Starts a server keeping its data in {@code dataDir}. */
    static LoopbackZooKeeper start(Path dataDir) throws IOException, InterruptedException {
        File dir = Files.createDirectories(dataDir).toFile();
        ZooKeeperServer server = new ZooKeeperServer(dir, dir, 500);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 200);
        factory.startup(server);
        return new LoopbackZooKeeper(factory);
    }

    /** The connect string, {@code 127.0.0.1:PORT}. */
    String connect() {
        return "127.0.0.1:" + factory.getLocalPort();
    }

    @Override
    public void close() {
        factory.shutdown();
    }
}
