package body Greeting_API is

   --  Servlet.Rest has started the JSON document (Start_Document); one
   --  unnamed entity makes it {"greeting":"Hello World!"}.
   procedure Get_Greeting (Req    : in out Servlet.Rest.Request'Class;
                           Reply  : in out Servlet.Rest.Response'Class;
                           Stream : in out Servlet.Rest.Output_Stream'Class)
   is
      pragma Unreferenced (Req, Reply);
   begin
      Stream.Start_Entity ("");
      Stream.Write_Entity ("greeting", "Hello World!");
      Stream.End_Entity ("");
   end Get_Greeting;

end Greeting_API;
