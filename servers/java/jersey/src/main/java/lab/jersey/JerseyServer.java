package lab.jersey;

import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.ServerProperties;

/**
 * Jersey (JAX-RS) on the Grizzly HTTP container, as made by
 * GrizzlyHttpServerFactory. Paths other than /api get Jersey's 404.
 *
 * WORKERS = core and max size of the Grizzly TCPNIOTransport worker thread
 * pool under Jersey (resource methods run there). Selector threads are
 * Grizzly's default: one per available processor.
 */
public final class JerseyServer {

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        int port = intEnv("PORT", 8080);
        int workers = intEnv("WORKERS", 8);

        ResourceConfig config = new ResourceConfig(ApiResource.class)
                .property(ServerProperties.WADL_FEATURE_DISABLE, true);
        HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
                URI.create("http://0.0.0.0:" + port + "/"), config, false);
        for (NetworkListener listener : server.getListeners()) {
            listener.getTransport().getWorkerThreadPoolConfig()
                    .setCorePoolSize(workers).setMaxPoolSize(workers);
            listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        }

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }));
        server.start();
        System.out.println("jersey listening on " + port + " with " + workers + " workers");
        System.out.flush();
        stopped.await();
    }

    private static int intEnv(String name, int fallback) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            return fallback;
        }
        int n = Integer.parseInt(v.trim());
        if (n < 1) {
            throw new IllegalArgumentException(name + " must be >= 1, got " + v);
        }
        return n;
    }
}
