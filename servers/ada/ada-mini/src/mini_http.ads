--  A small, allocation-free parser for the head of an HTTP/1.x request.
--
--  The server keeps each connection's input in a byte buffer; this package
--  finds where a request head ends and extracts the few facts the server
--  needs to answer it and to stay in step with the byte stream (method,
--  whether the path is /api, the HTTP version, the Connection tokens, the
--  body length).

with Ada.Streams; use Ada.Streams;

package Mini_HTTP is

   Header_Limit : constant := 8 * 1024;
   --  Largest request head (request line + header fields + blank line)
   --  accepted, in bytes; a larger one is answered 431 and closed.

   type Method_Kind is (GET, HEAD, Other);

   type Parse_Status is
     (Ok,            --  a well-formed request head
      Malformed,     --  answer 400 and close
      Bad_Version);  --  not HTTP/1.x: answer 505 and close

   type Request_Info is record
      Status           : Parse_Status        := Malformed;
      Method           : Method_Kind         := Other;
      Is_Api           : Boolean             := False;  --  path is "/api"
      HTTP_1_0         : Boolean             := False;  --  else HTTP/1.1
      Wants_Close      : Boolean             := False;  --  Connection: close
      Wants_Keep_Alive : Boolean             := False;  --  ... keep-alive
      Content_Length   : Stream_Element_Count := 0;
      Has_Body_Coding  : Boolean             := False;  --  Transfer-Encoding
   end record;

   CR : constant Stream_Element := 13;
   LF : constant Stream_Element := 10;

   function Find_Head_End
     (Data : Stream_Element_Array;
      From : Stream_Element_Offset) return Stream_Element_Offset;
   --  Index in Data of the LF that ends the blank line closing a request
   --  head, or 0 when Data holds no complete head yet.  Only line ends at
   --  indices >= From are considered, so a caller that keeps the index
   --  where its previous search stopped scans every byte once.  Lines may
   --  end in CRLF or in a bare LF.  Data must not start with a line end.

   function Parse (Text : Stream_Element_Array) return Request_Info;
   --  Parse a complete request head, as delimited by Find_Head_End.

end Mini_HTTP;
