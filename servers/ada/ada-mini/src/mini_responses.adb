package body Mini_Responses is

   CRLF : constant String := ASCII.CR & ASCII.LF;

   Table : array (Kind, Connection_Field, Boolean) of Bytes_Access;

   function Get
     (Response : Kind;
      Field    : Connection_Field;
      Head_Only : Boolean) return Bytes_Access is
   begin
      return Table (Response, Field, Head_Only);
   end Get;

   function To_Bytes (S : String) return Stream_Element_Array;

   function To_Bytes (S : String) return Stream_Element_Array is
      Result : Stream_Element_Array (1 .. S'Length);
   begin
      for K in S'Range loop
         Result (Stream_Element_Offset (K - S'First + 1)) :=
           Character'Pos (S (K));
      end loop;
      return Result;
   end To_Bytes;

   --  Decimal image without the leading space.
   function Image (N : Natural) return String is
     (Natural'Image (N) (2 .. Natural'Image (N)'Last));

   function Build
     (Response : Kind;
      Field    : Connection_Field;
      Head_Only : Boolean) return String;

   function Build
     (Response : Kind;
      Field    : Connection_Field;
      Head_Only : Boolean) return String
   is
      function Status_Line return String is
        (case Response is
            when Greeting              => "200 OK",
            when Not_Found             => "404 Not Found",
            when Method_Not_Allowed    => "405 Method Not Allowed",
            when Bad_Request           => "400 Bad Request",
            when Header_Too_Large      =>
               "431 Request Header Fields Too Large",
            when Not_Implemented       => "501 Not Implemented",
            when Version_Not_Supported => "505 HTTP Version Not Supported");

      function Content return String is
        (case Response is
            when Greeting => "{""greeting"":""Hello World!""}",
            when others   => Status_Line (5 .. Status_Line'Last) & ASCII.LF);

      function Content_Type return String is
        (if Response = Greeting then "application/json"
         else "text/plain");

      function Extra_Fields return String is
        (if Response = Method_Not_Allowed then "Allow: GET, HEAD" & CRLF
         else "");

      function Connection return String is
        (case Field is
            when None       => "",
            when Keep_Alive => "Connection: keep-alive" & CRLF,
            when Close      => "Connection: close" & CRLF);

      Head : constant String :=
        "HTTP/1.1 " & Status_Line & CRLF
        & "Server: ada-mini" & CRLF
        & "Content-Type: " & Content_Type & CRLF
        & "Content-Length: " & Image (Content'Length) & CRLF
        & Extra_Fields
        & Connection
        & CRLF;
   begin
      return (if Head_Only then Head else Head & Content);
   end Build;

begin
   for R in Kind loop
      for F in Connection_Field loop
         for H in Boolean loop
            Table (R, F, H) := new Stream_Element_Array'
              (To_Bytes (Build (R, F, H)));
            if Table (R, F, H)'Length > Max_Length then
               raise Program_Error with "Mini_Responses.Max_Length too small";
            end if;
         end loop;
      end loop;
   end loop;
end Mini_Responses;
