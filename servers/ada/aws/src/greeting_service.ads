--  The request handler of the lab's AWS server.

with AWS.Response;
with AWS.Status;

package Greeting_Service is

   --  The JSON body of GET /api: exactly 27 bytes.
   Greeting : constant String := "{""greeting"":""Hello World!""}";

   --  GET /api answers 200 with Greeting as application/json; any other
   --  path answers 404 with a short text body.
   function Callback (Request : AWS.Status.Data) return AWS.Response.Data;

end Greeting_Service;
