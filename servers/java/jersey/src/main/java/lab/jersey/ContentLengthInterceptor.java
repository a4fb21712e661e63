package lab.jersey;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;

import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.ext.WriterInterceptor;
import jakarta.ws.rs.ext.WriterInterceptorContext;

/**
 * Buffers the entity and sets Content-Length before the headers go out, as
 * Jersey itself does on containers that let it buffer. Registered only on
 * Jetty, whose Jersey container streams every entity (Jetty would send it
 * chunked, against the lab's contract). The headers are written on the
 * first byte, so the length is known by then.
 */
final class ContentLengthInterceptor implements WriterInterceptor {

    @Override
    public void aroundWriteTo(WriterInterceptorContext context) throws IOException {
        OutputStream out = context.getOutputStream();
        ByteArrayOutputStream entity = new ByteArrayOutputStream(64);
        context.setOutputStream(entity);
        context.proceed();
        context.getHeaders().putSingle(HttpHeaders.CONTENT_LENGTH, entity.size());
        entity.writeTo(out);
    }
}
