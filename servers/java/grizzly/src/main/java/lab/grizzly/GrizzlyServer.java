package lab.grizzly;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import lab.env.LabEnv;

import org.glassfish.grizzly.http.server.HttpHandler;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.grizzly.http.server.Request;
import org.glassfish.grizzly.http.server.Response;
import org.glassfish.grizzly.http.util.ContentType;
import org.glassfish.grizzly.threadpool.ThreadPoolConfig;

/**
 * Grizzly HTTP server with one plain HttpHandler that answers exactly "/api";
 * every other path gets a 404 (Grizzly's error page).
 *
 * WORKERS = core and max size of the TCPNIOTransport worker thread pool
 * (the default WorkerThreadIOStrategy runs the handler there). The selector
 * (kernel) threads are Grizzly's default: one per available processor.
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with an accept backlog of BACKLOG (default 512; Grizzly's
 * own default is 4096), the transport's server connection backlog.
 */
public final class GrizzlyServer {

    private static final byte[] BODY =
            "{\"greeting\":\"Hello World!\"}".getBytes(StandardCharsets.US_ASCII);
    private static final String PATH = "/api";
    private static final ContentType JSON = ContentType.newContentType("application/json").prepare();

    private static final class ApiHandler extends HttpHandler {
        @Override
        public void service(Request request, Response response) throws Exception {
            // Compare the decoded path in place (no String is built).
            if (!request.getRequest().getRequestURIRef().getDecodedRequestURIBC().equals(PATH)) {
                response.sendError(404);
                return;
            }
            response.setContentType(JSON);
            response.setContentLength(BODY.length);
            response.getOutputStream().write(BODY);
        }
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(0);   // 0: unset, the library's default (as shipped)
        int backlog = LabEnv.backlog();

        HttpServer server = new HttpServer();
        NetworkListener listener = new NetworkListener("api", bind.getHostAddress(), port);
        listener.getTransport().setServerConnectionBackLog(backlog);
        ThreadPoolConfig pool = listener.getTransport().getWorkerThreadPoolConfig();
        if (workers > 0) {
            pool.setCorePoolSize(workers).setMaxPoolSize(workers);
        }
        listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        server.addListener(listener);
        // Registered at the root: Grizzly's mapper gives a lone handler every
        // path, so the handler itself checks for exactly "/api".
        server.getServerConfiguration().addHttpHandler(new ApiHandler());

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }));
        server.start();
        ThreadPoolConfig ran = listener.getTransport().getWorkerThreadPoolConfig();
        System.out.println("grizzly listening on " + LabEnv.hostPort(bind, port) + " (backlog " + backlog
                + ")");
        // what it runs with, read back from Grizzly (the lab records this line)
        System.out.println("lab-workers: " + ran.getMaxPoolSize() + " (worker pool core "
                + ran.getCorePoolSize() + ", max " + ran.getMaxPoolSize()
                + (workers > 0 ? ", from WORKERS" : ", Grizzly's default") + "; selector threads "
                + listener.getTransport().getSelectorRunnersCount() + ")");
        System.out.flush();
        stopped.await();
    }
}
