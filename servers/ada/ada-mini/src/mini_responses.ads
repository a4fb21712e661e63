--  Every response ada-mini can send, built once at elaboration as the
--  exact bytes written to the socket.

with Ada.Streams; use Ada.Streams;

package Mini_Responses is

   type Kind is
     (Greeting,                --  200, GET /api
      Not_Found,               --  404, any other path
      Method_Not_Allowed,      --  405, neither GET nor HEAD
      Bad_Request,             --  400, malformed request head
      Header_Too_Large,        --  431, request head over the limit
      Not_Implemented,         --  501, a Transfer-Encoding body
      Version_Not_Supported);  --  505, not HTTP/1.x

   --  The Connection field of the response.
   type Connection_Field is
     (None,         --  HTTP/1.1 persistent connection: no field
      Keep_Alive,   --  "Connection: keep-alive" (HTTP/1.0 keep-alive)
      Close);       --  "Connection: close", then the server closes

   type Bytes_Access is access constant Stream_Element_Array;

   function Get
     (Response : Kind;
      Field    : Connection_Field;
      Head_Only : Boolean) return Bytes_Access
     with Inline;
   --  The bytes of a response; Head_Only omits the body (HEAD requests).

   Max_Length : constant Stream_Element_Count := 256;
   --  No response is longer (checked at elaboration).

end Mini_Responses;
