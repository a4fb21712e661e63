package lab.jersey;

import java.io.File;
import java.net.InetAddress;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

import lab.env.LabEnv;

import io.undertow.Undertow;
import io.undertow.servlet.Servlets;
import io.undertow.servlet.api.DeploymentManager;
import io.undertow.servlet.util.ImmediateInstanceFactory;

import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.glassfish.grizzly.http.server.HttpServer;
import org.glassfish.grizzly.http.server.NetworkListener;
import org.glassfish.grizzly.threadpool.ThreadPoolConfig;
import org.glassfish.jersey.grizzly2.httpserver.GrizzlyHttpServerFactory;
import org.glassfish.jersey.jetty.JettyHttpContainer;
import org.glassfish.jersey.server.ContainerFactory;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.ServerProperties;
import org.glassfish.jersey.servlet.ServletContainer;
import org.xnio.Options;

/**
 * One JAX-RS application (ApiResource) on the container JAXRS_CONTAINER
 * names, so that the containers are compared under the same Jersey code:
 *
 * <ul>
 * <li>grizzly (default): GrizzlyHttpServerFactory. WORKERS = core and max
 *     size of the TCPNIOTransport worker pool; selector threads are
 *     Grizzly's default, one per available processor.</li>
 * <li>jetty: Jersey's JettyHttpContainer, a core Jetty Handler. WORKERS =
 *     request threads: the QueuedThreadPool holds WORKERS + 1 acceptor +
 *     selectors, because Jetty draws those from the same pool (as the lab's
 *     jetty server does).</li>
 * <li>tomcat: Jersey's ServletContainer on embedded Tomcat (NIO connector).
 *     WORKERS = maxThreads = minSpareThreads.</li>
 * <li>undertow: Jersey's ServletContainer in an Undertow servlet deployment;
 *     servlet requests run on the worker pool. WORKERS = setWorkerThreads;
 *     IO threads max(2, available processors), Undertow's own default.</li>
 * </ul>
 *
 * Paths other than /api get Jersey's 404 (each container maps everything to
 * Jersey). Jersey buffers the small entity and sets Content-Length itself on
 * Grizzly and the servlet containers; on Jetty see jetty().
 *
 * It listens on BIND:PORT (default 127.0.0.1:8080, never every interface
 * unless asked) with the accept backlog BACKLOG (default 512), set through
 * each container's own listener option.
 */
public final class JerseyServer {

    /** Stops a started container (run by the shutdown hook). */
    private interface Running {
        void stop() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Logger.getLogger("").setLevel(Level.WARNING);   // no INFO chatter from JUL
        InetAddress bind = LabEnv.bind();
        int port = LabEnv.port();
        int workers = LabEnv.workers().orElse(0);   // 0: unset, the library's default (as shipped)
        int backlog = LabEnv.backlog();
        String container = LabEnv.choice("JAXRS_CONTAINER", "grizzly", "grizzly", "jetty", "tomcat", "undertow");

        ResourceConfig config = new ResourceConfig(ApiResource.class)
                .property(ServerProperties.WADL_FEATURE_DISABLE, true);
        Running running = switch (container) {
            case "jetty" -> jetty(config, bind, port, workers, backlog);
            case "tomcat" -> tomcat(config, bind, port, workers, backlog);
            case "undertow" -> undertow(config, bind, port, workers, backlog);
            default -> grizzly(config, bind, port, workers, backlog);
        };

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                running.stop();
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        System.out.println("jersey on " + container + " listening on " + LabEnv.hostPort(bind, port)
                + " (backlog " + backlog + ")");
        System.out.flush();
        stopped.await();
    }

    private static Running grizzly(ResourceConfig config, InetAddress bind, int port,
                                   int workers, int backlog) throws Exception {
        HttpServer server = GrizzlyHttpServerFactory.createHttpServer(
                URI.create("http://" + LabEnv.hostPort(bind, port) + "/"), config, false);
        for (NetworkListener listener : server.getListeners()) {
            listener.getTransport().setServerConnectionBackLog(backlog);
            if (workers > 0) {
                listener.getTransport().getWorkerThreadPoolConfig()
                        .setCorePoolSize(workers).setMaxPoolSize(workers);
            }
            listener.getKeepAlive().setMaxRequestsCount(-1);   // unlimited requests per connection
        }
        server.start();
        for (NetworkListener listener : server.getListeners()) {
            ThreadPoolConfig ran = listener.getTransport().getWorkerThreadPoolConfig();
            System.out.println("lab-workers: " + ran.getMaxPoolSize() + " (Grizzly worker pool core "
                    + ran.getCorePoolSize() + ", max " + ran.getMaxPoolSize()
                    + (workers > 0 ? ", from WORKERS" : ", Grizzly's default") + "; selector threads "
                    + listener.getTransport().getSelectorRunnersCount() + ")");
        }
        return server::shutdownNow;
    }

    private static Running jetty(ResourceConfig config, InetAddress bind, int port,
                                 int workers, int backlog) throws Exception {
        int acceptors = workers > 0 ? 1 : -1;               // -1: Jetty's own (as shipped)
        int selectors = workers > 0 ? Math.max(1, Runtime.getRuntime().availableProcessors() / 2)
                : -1;
        int poolSize = workers + acceptors + selectors;
        QueuedThreadPool pool = workers > 0 ? new QueuedThreadPool(poolSize, poolSize)
                : new QueuedThreadPool();
        pool.setName("jetty");
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, acceptors, selectors,
                new HttpConnectionFactory());
        connector.setHost(bind.getHostAddress());
        connector.setPort(port);
        connector.setAcceptQueueSize(backlog);
        server.addConnector(connector);
        // Jersey's Jetty 12 container turns Jersey's response buffering off
        // (enableResponseBuffering() is false), so the entity would go out
        // chunked; the interceptor restores the length (see its comment).
        config.register(ContentLengthInterceptor.class);
        server.setHandler(ContainerFactory.createContainer(JettyHttpContainer.class, config));
        server.start();
        int ranAcceptors = connector.getAcceptors();
        int ranSelectors = connector.getSelectorManager().getSelectorCount();
        System.out.println("lab-workers: " + (pool.getMaxThreads() - ranAcceptors - ranSelectors)
                + " (request threads; QueuedThreadPool min " + pool.getMinThreads() + ", max "
                + pool.getMaxThreads() + (workers > 0 ? ", from WORKERS" : ", Jetty's default")
                + "; " + ranAcceptors + " acceptor, " + ranSelectors + " selectors)");
        return server::stop;
    }

    private static Running tomcat(ResourceConfig config, InetAddress bind, int port,
                                  int workers, int backlog) throws Exception {
        Tomcat tomcat = new Tomcat();
        // Tomcat wants a base/work directory; keep it out of the source tree.
        File base = new File(System.getProperty("java.io.tmpdir"), "lab-jersey-tomcat-" + port);
        tomcat.setBaseDir(base.getAbsolutePath());
        tomcat.getServer().setPort(-1);                     // no shutdown socket

        Connector connector = tomcat.getConnector();        // HTTP/1.1 NIO
        connector.setPort(port);
        connector.setThrowOnFailure(true);                  // a failed bind must fail start()
        connector.setProperty("address", bind.getHostAddress());
        connector.setProperty("acceptCount", Integer.toString(backlog));
        if (workers > 0) {                                  // unset: Tomcat's own (as shipped)
            connector.setProperty("maxThreads", Integer.toString(workers));
            connector.setProperty("minSpareThreads", Integer.toString(workers));
        }
        connector.setProperty("maxKeepAliveRequests", "-1");  // unlimited requests per connection

        Context ctx = tomcat.addContext("", null);
        Tomcat.addServlet(ctx, "jersey", new ServletContainer(config));
        ctx.addServletMappingDecoded("/*", "jersey");
        tomcat.start();
        System.out.println("lab-workers: " + connector.getProperty("maxThreads")
                + " (connector maxThreads " + connector.getProperty("maxThreads")
                + ", minSpareThreads " + connector.getProperty("minSpareThreads")
                + (workers > 0 ? ", from WORKERS" : ", Tomcat's default") + ")");
        return tomcat::stop;
    }

    private static Running undertow(ResourceConfig config, InetAddress bind, int port,
                                    int workers, int backlog) throws Exception {
        DeploymentManager deployment = Servlets.defaultContainer().addDeployment(
                Servlets.deployment()
                        .setClassLoader(JerseyServer.class.getClassLoader())
                        .setContextPath("/")
                        .setDeploymentName("jersey")
                        .addServlet(Servlets.servlet("jersey", ServletContainer.class,
                                        new ImmediateInstanceFactory<>(new ServletContainer(config)))
                                .addMapping("/*")
                                .setLoadOnStartup(1)));
        deployment.deploy();
        int ioThreads = Math.max(2, Runtime.getRuntime().availableProcessors());
        int ranWorkers = workers > 0 ? workers : ioThreads * 8;   // Undertow's own default
        Undertow server = Undertow.builder()
                .addHttpListener(port, bind.getHostAddress())
                .setSocketOption(Options.BACKLOG, backlog)
                .setIoThreads(ioThreads)
                .setWorkerThreads(ranWorkers)
                .setHandler(deployment.start())
                .build();
        server.start();
        System.out.println("lab-workers: " + ranWorkers + " (XNIO task pool"
                + (workers > 0 ? ", from WORKERS" : ", Undertow's default: 8 per IO thread")
                + "; " + ioThreads + " IO threads)");
        return () -> {
            server.stop();
            deployment.stop();
        };
    }
}
