package io.zooid;

import java.io.IOException;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One {@link TestZooKeeper} shared by all the tests of a class: started before the first test and
 * closed (data directory removed) after the last. Register it in a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final SharedZooKeeper zk = new SharedZooKeeper();
 * }</pre>
 */
final class SharedZooKeeper implements BeforeAllCallback, AfterAllCallback {
    private TestZooKeeper server;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        server = TestZooKeeper.start();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (server != null) {
            try {
                server.close();
            } finally {
                server = null;
            }
        }
    }

    /** The running server; only between the class's first and last test. */
    private TestZooKeeper server() {
        if (server == null) {
            throw new IllegalStateException("SharedZooKeeper is not running: register it with @RegisterExtension on a static field");
        }
        return server;
    }

    /** The server's connect string, {@code 127.0.0.1:PORT}. */
    String connectString() {
        return server().connectString();
    }

    /** The number of sessions the server holds. */
    long sessionCount() {
        return server().sessionCount();
    }

    /** A plain ZooKeeper Java client, connected; the caller closes it. */
    ZooKeeper client() throws IOException, InterruptedException {
        return server().client();
    }
}
