package io.zooid;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on a free loopback port in front of a ZooKeeper server that can swallow every reply:
 * requests still reach the server and are applied, but the client never hears back. That is a
 * lost reply, the case where a write's outcome is unknown to its client.
 */
final class ReplyDroppingProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean dropReplies;
    /** When set, the first request containing these bytes starts {@link #dropReplies()}. */
    private volatile byte[] dropAfter;
    private volatile boolean closed;

    ReplyDroppingProxy(String targetHostPort) throws IOException {
        String[] parts = targetHostPort.split(":");
        this.target = new InetSocketAddress(parts[0], Integer.parseInt(parts[1]));
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "reply-dropping-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String connectString() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    /** From now on, replies are read from the server and thrown away. */
    void dropReplies() {
        dropReplies = true;
    }

    /**
     * From the first client request containing {@code pattern} (in one read from the socket) on,
     * replies are thrown away: that request reaches the server, its reply and every later one
     * are lost. The requests before it are answered as usual.
     */
    void dropRepliesFromRequestContaining(byte[] pattern) {
        dropAfter = pattern.clone();
    }

    /** Replies flow again; current connections are cut so that clients reconnect cleanly. */
    void heal() {
        dropReplies = false;
        dropAfter = null;
        closeSockets();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket();
                server.connect(target, 5000);
                sockets.add(client);
                sockets.add(server);
                pump(client, server, false);
                pump(server, client, true);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, boolean replies) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (replies && dropReplies) {
                        continue;
                    }
                    byte[] pattern = dropAfter;
                    if (!replies && pattern != null && contains(buffer, n, pattern)) {
                        dropReplies = true;
                        dropAfter = null;
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // The connection ended: end its other half too.
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "reply-dropping-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static boolean contains(byte[] buffer, int n, byte[] pattern) {
        outer:
        for (int i = 0; i + pattern.length <= n; i++) {
            for (int j = 0; j < pattern.length; j++) {
                if (buffer[i + j] != pattern[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    private void closeSockets() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // Already closed.
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
        closeSockets();
    }
}
